import Synchronization

/// Wakes one waiting task: ``wait(until:)`` returns when ``signal()`` is called (or was called since the last
/// wait), when the deadline passes, or when the task is cancelled. Signals do not pile up: many signals while
/// nobody waits make one wake-up.
final class Wakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func signal() {
        let resume: CheckedContinuation<Void, Never>? = state.withLock { state in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.signalled = true
            return nil
        }
        resume?.resume()
    }

    /// Waits for a signal, at most until `deadline` (nil: no deadline). Returns true when signalled.
    @discardableResult
    func wait(until deadline: ContinuousClock.Instant?) async -> Bool {
        if state.withLock({ state -> Bool in
            defer { state.signalled = false }
            return state.signalled
        }) { return true }
        let timer: Task<Void, Never>? = deadline.map { deadline in
            Task { [weak self] in
                try? await Task.sleep(until: deadline, clock: .continuous)
                self?.signal()
            }
        }
        defer { timer?.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow: Bool = state.withLock { state in
                    if state.signalled || Task.isCancelled {
                        state.signalled = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            signal()
        }
        guard let deadline else { return true }
        return ContinuousClock.now < deadline
    }
}
