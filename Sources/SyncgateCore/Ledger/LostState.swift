import Foundation

/// The ledger's "file lost" verdict, shared by every writer.
final class LostState: @unchecked Sendable {
    private let lock = NSLock()
    private var error: LedgerError?
    func withLock<T>(_ body: (inout LedgerError?) throws -> T) rethrows -> T {
        try lock.withLock { try body(&error) }
    }
}
