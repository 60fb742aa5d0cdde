import Foundation

/// Ends upload attempts that overrun their time limit. One watchdog serves all of a delivery layer's attempts,
/// waking at the earliest deadline, instead of a timer task per attempt (which cost more than copying a small
/// file).
final class AttemptWatchdog: @unchecked Sendable {
    private struct Running {
        var deadline: ContinuousClock.Instant
        var cancel: (@Sendable () -> Void)?
    }

    private let lock = NSLock()
    private var nextID = 0
    private var running: [Int: Running] = [:]
    private var expired: Set<Int> = []
    private var watching = false

    /// Runs `body` in a task of its own, cancelled when `timeout` passes while it still runs (this then throws
    /// ``AttemptTimeoutError``) or when the caller is cancelled. An attempt that ended before its deadline keeps
    /// its result or its own error.
    func run<T: Sendable>(timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let id = register(deadline: ContinuousClock.now + timeout)
        let task = Task {
            defer { self.ended(id) }
            return try await body()
        }
        setCancel(id) { task.cancel() }
        do {
            let value = try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
            _ = forget(id)
            return value
        } catch {
            if forget(id) { throw AttemptTimeoutError(timeout: timeout) }
            throw error
        }
    }

    private func register(deadline: ContinuousClock.Instant) -> Int {
        lock.withLock {
            nextID += 1
            running[nextID] = Running(deadline: deadline, cancel: nil)
            if !watching {
                watching = true
                Task.detached { await self.watch() }
            }
            return nextID
        }
    }

    private func setCancel(_ id: Int, _ cancel: @escaping @Sendable () -> Void) {
        let expiredAlready: Bool = lock.withLock {
            if running[id] != nil { running[id]?.cancel = cancel }
            return expired.contains(id)
        }
        if expiredAlready { cancel() }
    }

    /// The attempt's work is over (returned or threw): its deadline no longer applies.
    private func ended(_ id: Int) {
        lock.withLock { _ = running.removeValue(forKey: id) }
    }

    /// Forgets an attempt; returns whether its deadline passed while it ran.
    private func forget(_ id: Int) -> Bool {
        lock.withLock {
            running[id] = nil
            return expired.remove(id) != nil
        }
    }

    private func watch() async {
        while true {
            let (cancels, wait): ([@Sendable () -> Void], Duration?) = lock.withLock {
                let now = ContinuousClock.now
                var cancels: [@Sendable () -> Void] = []
                for (id, attempt) in running where attempt.deadline <= now {
                    expired.insert(id)
                    running[id] = nil
                    if let cancel = attempt.cancel { cancels.append(cancel) }
                }
                guard let earliest = running.values.map(\.deadline).min() else {
                    watching = false
                    return (cancels, nil)
                }
                // Attempts of one layer share one timeout, so a later registration never has an earlier deadline;
                // the cap only bounds how late a stray one could be noticed.
                return (cancels, min(earliest - now, .seconds(1)))
            }
            for cancel in cancels { cancel() }
            guard let wait else { return }
            try? await Task.sleep(for: max(wait, .milliseconds(1)))
        }
    }
}
