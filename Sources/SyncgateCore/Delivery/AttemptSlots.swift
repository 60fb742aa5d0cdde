import Synchronization

/// Bounds the attempts in flight at one destination (its `concurrency`, lowered while it throttles), counting only
/// attempts that run: a file waiting out its backoff, or for the breaker's trial, holds no slot, so the other files
/// keep the destination busy meanwhile (a flaky server's failures cost their own backoff, not everyone's).
/// Waiters are served first come, first served.
public final class AttemptSlots: Sendable {
    private struct Waiter {
        var id: UInt64
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var inUse = 0
        var nextID: UInt64 = 0
        var waiters: [Waiter] = []
    }

    private let state = Mutex(State())
    /// The slots there are now (read at each acquire and release).
    private let limit: @Sendable () -> Int

    public init(limit: @escaping @Sendable () -> Int) {
        self.limit = limit
    }

    /// Waits for a slot. Returns false, holding none, when the task is cancelled while it waits.
    public func acquire() async -> Bool {
        if Task.isCancelled { return false }
        let limit = max(1, self.limit())
        let id: UInt64? = state.withLock { state in
            if state.inUse < limit && state.waiters.isEmpty {
                state.inUse += 1
                return nil
            }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return true }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow: Bool? = state.withLock { state in
                    if Task.isCancelled { return false }
                    // A slot may have been released between the first look and now.
                    if state.inUse < limit && state.waiters.isEmpty {
                        state.inUse += 1
                        return true
                    }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return nil
                }
                if let resumeNow { continuation.resume(returning: resumeNow) }
            }
        } onCancel: {
            let cancelled: Waiter? = state.withLock { state in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            cancelled?.continuation.resume(returning: false)
        }
    }

    /// Gives a slot back, handing it to the next waiter when the limit allows.
    public func release() {
        let limit = max(1, self.limit())
        let next: [Waiter] = state.withLock { state in
            state.inUse -= 1
            var served: [Waiter] = []
            while state.inUse < limit, !state.waiters.isEmpty {
                state.inUse += 1
                served.append(state.waiters.removeFirst())
            }
            return served
        }
        for waiter in next { waiter.continuation.resume(returning: true) }
    }
}
