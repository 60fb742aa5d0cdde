import Foundation

/// Runs blocking work (a synchronous ledger call that may wait seconds for a stalled PostgreSQL, a semaphore) on a
/// thread of its own, so that a test does not hold one of the cooperative pool's threads while it waits: on a
/// two-core machine the pool has two, and a full run's other tests (and their servers' handlers) need them.
public enum OffThePool {
    public static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread { continuation.resume(with: Result { try work() }) }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }
}
