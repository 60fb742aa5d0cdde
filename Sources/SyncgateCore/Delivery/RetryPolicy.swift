import Foundation

/// Decides, and only decides, what comes after a failed attempt (Vector's `RetryLogic`): retry after a delay,
/// wait for the destination, or give up. The one loop that acts on it is
/// ``DeliveryLayer/withRetries(subject:policy:pacing:cancellation:slots:started:retrying:_:)``; it holds no state
/// of its own beyond the ``Tally`` the loop hands it.
///
/// Every wait syncgate spaces out by doubling is computed here, by ``doubling(_:first:cap:)``: the backoff between
/// retries within a run (`base_delay` doubling up to `max_delay`, with jitter), the next run's retry of a failed file
/// (1 minute doubling up to `max_retry_interval`), the next probe of an away destination (2 s doubling up to
/// `probe_interval_max`) and the restart of a crashed plugin (0.25 s doubling up to 10 s). A server's Retry-After is
/// always the least wait.
public struct RetryPolicy: Sendable {
    /// Backoff bounds, jitter, and the schedule across runs.
    public var settings: RetrySettings
    /// Retries allowed after the first attempt (0 disables retries).
    public var retries: Int
    /// The longest Retry-After waited for within a run; a longer one fails the work now, scheduled no sooner.
    public var maximumWait: Duration
    /// The longest a piece of work waits in all for the destination's "not yet" (deferred) answers.
    public var deferredLimit: Duration
    /// Returns a uniform value in the range (injectable for tests).
    public var random: @Sendable (ClosedRange<Double>) -> Double

    public init(
        settings: RetrySettings, retries: Int? = nil, maximumWait: Duration? = nil, deferredLimit: Duration = .seconds(600),
        random: @escaping @Sendable (ClosedRange<Double>) -> Double = { Double.random(in: $0) }
    ) {
        self.settings = settings
        self.retries = max(0, retries ?? settings.file)
        self.maximumWait = maximumWait ?? RetryPolicy.maximumWait(settings)
        self.deferredLimit = deferredLimit
        self.random = random
    }

    /// The longest Retry-After waited for within a run by default: `max_delay`, at least a minute.
    public static func maximumWait(_ settings: RetrySettings) -> Duration { max(settings.maxDelay, .seconds(60)) }

    /// How many times a piece of work's retry count may start afresh on new connections within one run.
    public static let connectionResetLimit = 4

    // MARK: - Deciding

    /// What comes after a failed attempt.
    public enum Decision: Sendable, Equatable {
        /// Wait `delay` on the clock, then attempt again (the failure is reported as a retry).
        case retry(DeliveryFailure, after: Duration)
        /// The destination throttles: pause it for `delay` (no retry spent), then attempt again.
        case pause(DeliveryFailure, for: Duration)
        /// The destination is failing (the circuit breaker holds attempts back): no retry spent, the work waits for
        /// the breaker's trial, `coolDown` from now.
        case holdForTrial(DeliveryFailure, coolDown: Duration)
        /// The destination is away (unreachable, blocked): the work waits for it, pending.
        case waitForDestination(DeliveryFailure)
        /// Not done in this run: permanent, retries spent, the file changed, or a Retry-After too long to wait for
        /// (then `retryAfter` says when to try again).
        case fail(DeliveryFailure)
        /// Stopped by cancellation.
        case cancelled
    }

    /// What one piece of work has spent so far (kept by the loop, updated only here).
    public struct Tally: Sendable, Equatable {
        /// Attempts made, the failed one included.
        public var attempts = 0
        /// Retries spent (the count starts afresh on a new connection, a bounded number of times).
        public var retriesUsed = 0
        /// Time waited in all for deferred answers.
        public var deferredWait = Duration.zero
        /// Throttle answers so far (each pause backs off further when the server names no Retry-After).
        public var throttles = 0
        /// The destination's connection when the last retryable failure came.
        public var connection: Int?

        public init() {}
    }

    /// What an attempt's failure means, as the loop saw it.
    public struct Attempt: Sendable {
        /// The failure, classified (``DeliveryLayer/describeFailure(_:attempt:)``).
        public var failure: DeliveryFailure
        /// The file changed while it was sent: sending the same planned version again cannot help.
        public var fileChanged = false
        /// The work was cancelled while the attempt ran.
        public var interrupted = false
        /// The circuit breaker judged the destination failing (``CircuitBreaker/failed(subject:_:trial:)``): the cool-down
        /// left before its trial.
        public var breakerCoolDown: Duration?
        /// The destination's connection generation (``Destination/connectionGeneration``), read for retryable failures.
        public var connection: Int?

        public init(failure: DeliveryFailure, fileChanged: Bool = false, interrupted: Bool = false,
                    breakerCoolDown: Duration? = nil, connection: Int? = nil) {
            self.failure = failure
            self.fileChanged = fileChanged
            self.interrupted = interrupted
            self.breakerCoolDown = breakerCoolDown
            self.connection = connection
        }
    }

    /// Decides what comes after `attempt`, spending from `tally`:
    /// - destination-scoped: a throttle pauses the destination (the server's Retry-After, or the backoff), anything
    ///   else means the destination is away: the work waits for it;
    /// - a retryable failure while the breaker holds the destination failing spends no retry: the work waits for
    ///   the breaker's trial;
    /// - a changed file, a permanent failure: failed at once;
    /// - a Retry-After longer than ``maximumWait``: failed now, scheduled no sooner (``DeliveryFailure/retryAfter``);
    /// - deferred (the destination asks this one piece of work to wait): waited for, up to ``deferredLimit`` in all,
    ///   then like a retryable failure;
    /// - retryable: retried after ``delay(forRetry:retryAfter:)`` while fewer than ``retries`` were spent (the count
    ///   starts afresh on a new connection, while the attempts stay under `(retries + 1) * 4`).
    public func decide(_ attempt: Attempt, tally: inout Tally) -> Decision {
        var failure = attempt.failure
        let failureClass = failure.failureClass
        let interrupted = attempt.interrupted
        if failure.scope == .destination && !interrupted {
            guard case .deferred(let after) = failureClass else { return .waitForDestination(failure) }
            tally.throttles += 1
            return .pause(failure, for: after ?? delay(forRetry: tally.throttles))
        }
        if let coolDown = attempt.breakerCoolDown, !interrupted, !attempt.fileChanged {
            failure.failureClass = .deferred(after: coolDown)
            failure.message = "the destination is failing, waiting for a trial attempt: \(failure.message)"
            return .holdForTrial(failure, coolDown: coolDown)
        }
        if failureClass.isRetryable, let connection = attempt.connection {
            let attemptCap = (retries + 1) * RetryPolicy.connectionResetLimit
            if let previous = tally.connection, previous != connection, tally.attempts < attemptCap { tally.retriesUsed = 0 }
            tally.connection = connection
        }
        if attempt.fileChanged { return .fail(failure) }
        if case .retryable(let after?) = failureClass, after > maximumWait, !interrupted {
            // Honoured by scheduling, not by sleeping: a later run tries again no sooner than asked.
            failure.retryAfter = after
            return .fail(failure)
        }
        switch failureClass {
        case .permanent:
            return .fail(failure)
        case .deferred(let after) where !interrupted && tally.deferredWait < deferredLimit:
            // Not a spent retry: the destination asks to wait for this work, bounded in total.
            let delay = after ?? settings.baseDelay
            tally.deferredWait += delay
            return .retry(failure, after: delay)
        case .retryable(let after) where !interrupted && tally.retriesUsed < retries,
            .deferred(let after) where !interrupted && tally.retriesUsed < retries:
            tally.retriesUsed += 1
            return .retry(failure, after: delay(forRetry: tally.retriesUsed, retryAfter: after))
        default:
            return interrupted ? .cancelled : .fail(failure)
        }
    }

    /// The failure that puts a destination out for the run when its throttling outlasted `throttle_wait`.
    public static func throttledTooLong(_ failure: DeliveryFailure, throttleWait: Duration) -> DeliveryFailure {
        var outage = failure
        outage.failureClass = .retryable(after: failure.failureClass.retryAfter)
        outage.message = "throttled for more than throttle_wait (\(throttleWait.syncgateText)) in all; the last answer: \(failure.message)"
        return outage
    }

    // MARK: - The arithmetic

    /// The n-th wait (n from 1) of a series that starts at `first` and doubles up to `cap`: `min(cap, first * 2^(n-1))`,
    /// to the millisecond. Every doubling wait of syncgate is this one.
    public static func doubling(_ n: Int, first: Duration, cap: Duration) -> Duration {
        let exponent = min(max(n - 1, 0), 62)
        var raw = first.seconds
        for _ in 0..<exponent where raw < cap.seconds { raw *= 2 }
        return .milliseconds(Int64((min(cap.seconds, raw) * 1000).rounded()))
    }

    /// The exponential bound of retry `n` (1-based) within a run, before jitter: `base_delay` doubling up to `max_delay`.
    public func bound(forRetry n: Int) -> Duration {
        RetryPolicy.doubling(n, first: settings.baseDelay, cap: settings.maxDelay)
    }

    /// The wait before retry `n` (1-based) within a run: with full jitter uniform between `base_delay` and the
    /// bound, with equal jitter between half the bound and the bound, without jitter exactly the bound; a server's
    /// Retry-After is the least wait (so it may exceed `max_delay`, up to ``maximumWait``).
    public func delay(forRetry n: Int, retryAfter: Duration? = nil) -> Duration {
        let upper = bound(forRetry: n).seconds
        let lower = min(settings.baseDelay.seconds, upper)
        let seconds: Double
        switch settings.jitter {
        case .none: seconds = upper
        case .full: seconds = upper > lower ? random(lower...upper) : upper
        case .equal: seconds = upper / 2 + (upper > 0 ? random(0...(upper / 2)) : 0)
        }
        return RetryPolicy.atLeast(.milliseconds(Int64((seconds * 1000).rounded())), retryAfter)
    }

    /// `delay`, or a server's Retry-After when that is longer.
    public static func atLeast(_ delay: Duration, _ retryAfter: Duration?) -> Duration {
        guard let retryAfter, retryAfter > delay else { return delay }
        return retryAfter
    }

    // MARK: - Across runs, probes, restarts

    /// The first wait before a later run retries a failed file.
    public static let firstRunInterval: Duration = .seconds(60)
    /// The first wait before an away destination is probed again.
    public static let firstProbeInterval: Duration = .seconds(2)
    /// The first and the longest wait before a crashed plugin is started again.
    public static let firstRestartDelay: Duration = .milliseconds(250)
    public static let maximumRestartDelay: Duration = .seconds(10)

    /// The wait after a file's n-th failed run (n from 1): 1 minute doubling up to `max_retry_interval`.
    public func interval(failedRuns: Int) -> Duration {
        RetryPolicy.doubling(failedRuns, first: RetryPolicy.firstRunInterval, cap: settings.maxRetryInterval)
    }

    /// The next automatic retry of a file whose `failedRuns`-th failed run ended now, or nil when there is none: a
    /// permanent failure, or one failing for `give_up_after` (then only `syncgate retry` sends it). `firstFailedAt`
    /// starts its failure clock (moved on by the time its destination was away). No sooner than a Retry-After.
    public func nextRun(after failure: DeliveryFailure, failedRuns: Int, firstFailedAt: Date, now: Date) -> Date? {
        guard failure.failureClass.isRetryable else { return nil }
        guard now.timeIntervalSince(firstFailedAt) < settings.giveUpAfter.seconds else { return nil }
        return now.addingTimeInterval(RetryPolicy.atLeast(interval(failedRuns: failedRuns), failure.retryAfter).seconds)
    }

    /// How long after its n-th failed probe an away destination is probed again: 2 s doubling up to `maximum`
    /// (`probe_interval_max`).
    public static func probeInterval(failedProbes: Int, maximum: Duration) -> Duration {
        doubling(failedProbes, first: firstProbeInterval, cap: maximum)
    }

    /// How long after its n-th failed start or crash in a row a plugin is started again: 0.25 s doubling up to 10 s.
    public static func restartDelay(failures: Int) -> Duration {
        guard failures > 0 else { return .zero }
        return doubling(failures, first: firstRestartDelay, cap: maximumRestartDelay)
    }
}
