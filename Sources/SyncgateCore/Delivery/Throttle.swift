import Foundation
import Synchronization

/// Paces one destination that throttles (429, SlowDown, RESOURCE_EXHAUSTED) within a run: its uploads pause for the
/// server's Retry-After (or the backoff when there is none), no file's retry is spent, and the number of uploads in
/// flight adapts, additive increase and multiplicative decrease (as the AWS SDKs' adaptive retry mode and Vector's
/// adaptive concurrency do): halved on each throttle, one more after each `limit` successes, up to the configured
/// concurrency. A run waits out at most `budget` of pauses in all (`throttle_wait`); beyond that the destination
/// counts as unavailable and the rest waits for a later run.
public final class Throttle: Sendable {
    public let maximum: Int
    public let budget: Duration
    let clock: any SyncClock

    private struct State {
        var currentLimit: Int
        var successes = 0
        var pausedUntil: Date?
        var paused: TimeInterval = 0
    }

    private let state: Mutex<State>

    public init(concurrency: Int, budget: Duration, clock: any SyncClock) {
        self.maximum = max(1, concurrency)
        self.state = Mutex(State(currentLimit: max(1, concurrency)))
        self.budget = budget
        self.clock = clock
    }

    /// Uploads allowed in flight now.
    public var limit: Int { state.withLock { $0.currentLimit } }

    /// Time paused so far in this run.
    public var pausedSeconds: TimeInterval { state.withLock { $0.paused } }

    /// The destination throttled: pause everything for `delay`, halve the concurrency. Returns false when the pause
    /// would take the run's pauses past the budget (nothing is paused then: the caller gives up on the destination).
    public func throttled(for delay: Duration) -> Bool {
        let now = clock.now()
        return state.withLock { state in
            let end = now.addingTimeInterval(delay.seconds)
            let from = max(now, state.pausedUntil ?? now)
            let added = max(0, end.timeIntervalSince(from))
            guard state.paused + added <= budget.seconds else { return false }
            state.paused += added
            if end > (state.pausedUntil ?? .distantPast) { state.pausedUntil = end }
            state.currentLimit = max(1, state.currentLimit / 2)
            state.successes = 0
            return true
        }
    }

    /// An upload succeeded: after `limit` successes in a row the limit grows by one.
    public func succeeded() {
        state.withLock { state in
            state.successes += 1
            if state.successes >= state.currentLimit, state.currentLimit < maximum {
                state.currentLimit += 1
                state.successes = 0
            }
        }
    }

    /// Waits while the destination is paused. Throws when the task is cancelled.
    public func waitWhilePaused() async throws {
        while true {
            let now = clock.now()
            let wait: TimeInterval = state.withLock { state in
                guard let until = state.pausedUntil else { return 0 }
                if until <= now {
                    state.pausedUntil = nil
                    return 0
                }
                return until.timeIntervalSince(now)
            }
            guard wait > 0 else { return }
            try await clock.sleep(for: .milliseconds(Int64((wait * 1000).rounded(.up))))
        }
    }
}
