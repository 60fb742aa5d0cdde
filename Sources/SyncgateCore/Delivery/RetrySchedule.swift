import Foundation

/// When a file that failed in a run is tried again by a later one: 1 minute after its first failed run, doubling
/// per failed run up to `max_retry_interval`, no sooner than a server's Retry-After, and not at all once it has been
/// failing for `give_up_after` (then only `syncgate retry` sends it) or when the failure is permanent.
public struct RetrySchedule: Sendable {
    public var settings: RetrySettings

    public init(_ settings: RetrySettings) { self.settings = settings }

    /// The wait after a file's n-th failed run (n from 1).
    public func interval(failedRuns: Int) -> TimeInterval {
        let doubled = 60.0 * pow(2.0, Double(min(max(failedRuns - 1, 0), 30)))
        return min(settings.maxRetryInterval.seconds, doubled)
    }

    /// The next automatic retry of a file whose `failedRuns`-th failed run ended now, or nil when there is none.
    /// `firstFailedAt` starts its failure clock (moved on by the time its destination was away).
    public func nextRetry(after failure: DeliveryFailure, failedRuns: Int, firstFailedAt: Date, now: Date) -> Date? {
        guard failure.failureClass.isRetryable else { return nil }
        guard now.timeIntervalSince(firstFailedAt) < settings.giveUpAfter.seconds else { return nil }
        return now.addingTimeInterval(max(interval(failedRuns: failedRuns), failure.retryAfter?.seconds ?? 0))
    }
}
