import Foundation
import Synchronization

/// Ends upload attempts that overrun their time limit. One watchdog serves all of a delivery layer's attempts,
/// waking at the earliest deadline, instead of a timer task per attempt (which cost more than copying a small
/// file).
///
/// Time an attempt spends waiting for its destination's `bandwidth` limit does not count: while one of its reads
/// waits (``paused(_:_:)``), its deadline stands still, and it moves on by the time the wait took. Nor does the
/// time its task waits for a thread before it starts (a process busy elsewhere).
final class AttemptWatchdog: Sendable {
    private struct Running {
        var deadline: ContinuousClock.Instant
        var cancel: (@Sendable () -> Void)?
        /// Reads of the attempt waiting for the bandwidth limit now, and since when one has been.
        var pauses = 0
        var pausedSince: ContinuousClock.Instant? = nil
    }

    private struct State {
        var nextID = 0
        var running: [Int: Running] = [:]
        var expired: Set<Int> = []
        var watching = false
    }

    private let state = Mutex(State())

    /// Runs `body` in a task of its own, cancelled when `timeout` passes while it still runs (this then throws
    /// ``AttemptTimeoutError``) or when the caller is cancelled. An attempt that ended before its deadline keeps
    /// its result or its own error.
    /// `limits`, when given, pace the files the attempt reads to send (``SendPacing``), on `clock`.
    func run<T: Sendable>(
        timeout: Duration, limits: DeliveryLimits? = nil, clock: any SyncClock = SystemClock(),
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        // Registered paused: the deadline runs from when the attempt's task starts.
        let id = register(deadline: ContinuousClock.now + timeout)
        let pacing = limits?.pacing(clock: clock) { waiting in self.paused(id, waiting) }
        let task = Task {
            self.paused(id, false)
            defer { self.ended(id) }
            return try await SendPacing.$current.withValue(pacing) { try await body() }
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
        state.withLock { state in
            state.nextID += 1
            state.running[state.nextID] = Running(deadline: deadline, cancel: nil, pauses: 1, pausedSince: ContinuousClock.now)
            if !state.watching {
                state.watching = true
                Task.detached { await self.watch() }
            }
            return state.nextID
        }
    }

    private func setCancel(_ id: Int, _ cancel: @escaping @Sendable () -> Void) {
        let expiredAlready: Bool = state.withLock { state in
            if state.running[id] != nil { state.running[id]?.cancel = cancel }
            return state.expired.contains(id)
        }
        if expiredAlready { cancel() }
    }

    /// A read of the attempt starts (`true`) or ends (`false`) a wait for the bandwidth limit.
    func paused(_ id: Int, _ waiting: Bool) {
        state.withLock { state in
            guard var attempt = state.running[id] else { return }
            let now = ContinuousClock.now
            if waiting {
                attempt.pauses += 1
                if attempt.pauses == 1 { attempt.pausedSince = now }
            } else if attempt.pauses > 0 {
                attempt.pauses -= 1
                if attempt.pauses == 0, let since = attempt.pausedSince {
                    attempt.deadline += now - since
                    attempt.pausedSince = nil
                }
            }
            state.running[id] = attempt
        }
    }

    /// The attempt's work is over (returned or threw): its deadline no longer applies.
    private func ended(_ id: Int) {
        state.withLock { _ = $0.running.removeValue(forKey: id) }
    }

    /// Forgets an attempt; returns whether its deadline passed while it ran.
    private func forget(_ id: Int) -> Bool {
        state.withLock { state in
            state.running[id] = nil
            return state.expired.remove(id) != nil
        }
    }

    private func watch() async {
        while true {
            let (cancels, wait): ([@Sendable () -> Void], Duration?) = state.withLock { state in
                let now = ContinuousClock.now
                var cancels: [@Sendable () -> Void] = []
                for (id, attempt) in state.running where attempt.pauses == 0 && attempt.deadline <= now {
                    state.expired.insert(id)
                    state.running[id] = nil
                    if let cancel = attempt.cancel { cancels.append(cancel) }
                }
                if state.running.isEmpty {
                    state.watching = false
                    return (cancels, nil)
                }
                // A paused attempt's deadline moves on when its wait ends: it is looked at again within a second.
                let earliest = state.running.values.filter { $0.pauses == 0 }.map(\.deadline).min() ?? now + .seconds(1)
                return (cancels, min(earliest - now, .seconds(1)))
            }
            for cancel in cancels { cancel() }
            guard let wait else { return }
            try? await Task.sleep(for: max(wait, .milliseconds(1)))
        }
    }
}
