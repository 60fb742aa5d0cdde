import Foundation

/// Wakes one waiting task: ``wait(until:)`` returns when ``signal()`` is called (or was called since the last
/// wait), when the deadline passes, or when the task is cancelled. Signals do not pile up: many signals while
/// nobody waits make one wake-up.
final class Wakeup: @unchecked Sendable {
    private let lock = NSLock()
    private var signalled = false
    private var waiter: CheckedContinuation<Void, Never>?

    func signal() {
        let resume: CheckedContinuation<Void, Never>? = lock.withLock {
            if let waiter {
                self.waiter = nil
                return waiter
            }
            signalled = true
            return nil
        }
        resume?.resume()
    }

    /// Waits for a signal, at most until `deadline` (nil: no deadline). Returns true when signalled.
    @discardableResult
    func wait(until deadline: ContinuousClock.Instant?) async -> Bool {
        if lock.withLock({ () -> Bool in
            defer { signalled = false }
            return signalled
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
                let resumeNow: Bool = lock.withLock {
                    if signalled || Task.isCancelled {
                        signalled = false
                        return true
                    }
                    waiter = continuation
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
