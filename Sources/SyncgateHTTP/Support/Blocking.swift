import Dispatch

/// Runs blocking work (a ledger read) on a dispatch thread, so that it does not hold one of the few threads of
/// the cooperative pool the server's other requests and the gateway's uploads share.
enum Blocking {
    static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try work() })
            }
        }
    }
}
