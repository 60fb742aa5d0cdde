import Foundation

/// Paces one destination that throttles (429, SlowDown, RESOURCE_EXHAUSTED) within a run: its uploads pause for the
/// server's Retry-After (or the backoff when there is none), no file's retry is spent, and the number of uploads in
/// flight adapts, additive increase and multiplicative decrease (as the AWS SDKs' adaptive retry mode and Vector's
/// adaptive concurrency do): halved on each throttle, one more after each `limit` successes, up to the configured
/// concurrency. A run waits out at most `budget` of pauses in all (`throttle_wait`); beyond that the destination
/// counts as unavailable and the rest waits for a later run.
public final class Throttle: @unchecked Sendable {
    public let maximum: Int
    public let budget: Duration
    let clock: any SyncClock
    private let lock = NSLock()
    private var currentLimit: Int
    private var successes = 0
    private var pausedUntil: Date?
    private var paused: TimeInterval = 0

    public init(concurrency: Int, budget: Duration, clock: any SyncClock) {
        self.maximum = max(1, concurrency)
        self.currentLimit = max(1, concurrency)
        self.budget = budget
        self.clock = clock
    }

    /// Uploads allowed in flight now.
    public var limit: Int { lock.withLock { currentLimit } }

    /// Time paused so far in this run.
    public var pausedSeconds: TimeInterval { lock.withLock { paused } }

    /// The destination throttled: pause everything for `delay`, halve the concurrency. Returns false when the pause
    /// would take the run's pauses past the budget (nothing is paused then: the caller gives up on the destination).
    public func throttled(for delay: Duration) -> Bool {
        let now = clock.now()
        return lock.withLock {
            let end = now.addingTimeInterval(delay.seconds)
            let from = max(now, pausedUntil ?? now)
            let added = max(0, end.timeIntervalSince(from))
            guard paused + added <= budget.seconds else { return false }
            paused += added
            if end > (pausedUntil ?? .distantPast) { pausedUntil = end }
            currentLimit = max(1, currentLimit / 2)
            successes = 0
            return true
        }
    }

    /// An upload succeeded: after `limit` successes in a row the limit grows by one.
    public func succeeded() {
        lock.withLock {
            successes += 1
            if successes >= currentLimit, currentLimit < maximum {
                currentLimit += 1
                successes = 0
            }
        }
    }

    /// Waits while the destination is paused. Throws when the task is cancelled.
    public func waitWhilePaused() async throws {
        while true {
            let now = clock.now()
            let wait: TimeInterval = lock.withLock {
                guard let until = pausedUntil else { return 0 }
                if until <= now {
                    pausedUntil = nil
                    return 0
                }
                return until.timeIntervalSince(now)
            }
            guard wait > 0 else { return }
            try await clock.sleep(for: .milliseconds(Int64((wait * 1000).rounded(.up))))
        }
    }
}
