import Synchronization

/// The ledger's "file lost" verdict, shared by every writer.
final class LostState: Sendable {
    private let error = Mutex<LedgerError?>(nil)
    func withLock<T>(_ body: (inout LedgerError?) throws -> T) rethrows -> T {
        try error.withLock { try body(&$0) }
    }
}
