import NIOCore

/// Waits for an `EventLoopFuture` the way every socket wait of the plugin must: the waiting task's cancellation ends
/// the wait at once (with `CancellationError`), without completing the future itself, which others may share.
enum FutureWait {
    static func value<T: Sendable>(of future: EventLoopFuture<T>) async throws -> T {
        let waiter = future.eventLoop.makePromise(of: T.self)
        future.cascade(to: waiter)
        return try await withTaskCancellationHandler {
            try await waiter.futureResult.get()
        } onCancel: {
            // A promise completed twice keeps its first result: a late cancellation changes nothing.
            waiter.fail(CancellationError())
        }
    }

    /// A `Duration` as NIO's `TimeAmount`.
    static func timeAmount(_ duration: Duration) -> TimeAmount {
        .nanoseconds(Int64(duration.components.seconds) * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }
}
