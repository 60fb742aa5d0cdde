import Foundation
import Synchronization

/// Judges, for one run, whether a destination is there: it tells a destination that is **absent** from one that is
/// **flaky**, as Envoy's outlier detection and resilience4j's circuit breaker do.
///
/// - **Absent** (an error that says so: connection refused, DNS, connect timeout, TLS, no session, credentials
///   refused; each plugin classifies its errors as destination-scoped): ``trip(_:)`` opens the breaker for the rest
///   of the run at once. Uploads in flight end (``onTrip(_:)``), nothing more is tried, every file not delivered
///   waits, pending, with no attempt counted.
/// - **Failing** (the server answers, but most attempts fail): when at least ``failureRate`` of the last
///   ``windowSize`` attempts failed (and at least ``minimumAttempts`` attempts over ``minimumFiles`` files were
///   seen: five, or the destination's concurrency when lower), the breaker opens for a cool-down (1 s, doubling up to 8 s on each failed trial). No new attempt
///   starts; then it is **half-open**: one trial attempt goes. Any success closes the breaker and the run goes on;
///   a failed trial opens it for the next cool-down. Attempts are not spent meanwhile: the files wait for the
///   trial. Only when no trial succeeded within ``waitLimit`` (`unavailable_wait`) does the breaker stay open for
///   the rest of the run, as for an absent destination.
///
/// A short streak of failures never opens it: at 30% random errors, 16 failures in 20 attempts are as likely as
/// winning a lottery; at 100% it opens after about ten attempts.
public final class CircuitBreaker: Sendable {
    /// Attempts looked at (the most recent).
    public static let windowSize = 20
    /// Attempts seen before a failure rate is judged at all.
    public static let minimumAttempts = 10
    /// Different files among the failures before a failure rate is judged (fewer when fewer are sent at once:
    /// ``minimumFiles``).
    public static let minimumFilesAtMost = 5
    /// The share of failed attempts in the window that opens the breaker.
    public static let failureRate = 0.8
    /// The first cool-down before a trial; doubled after each failed trial up to ``maximumCoolDown``.
    public static let firstCoolDown: Duration = .seconds(1)
    public static let maximumCoolDown: Duration = .seconds(8)

    /// What an attempt may do now (``admit(clock:isCancelled:)``).
    public enum Admission: Sendable, Equatable {
        /// Go ahead (the breaker is closed).
        case go
        /// Go ahead as the half-open breaker's one trial: report its outcome with `trial: true`.
        case trial
        /// Do not: the destination is out for this run (the failure says why).
        case stop(DeliveryFailure)
        /// Do not: cancelled while waiting.
        case cancelled
    }

    private struct Outcome {
        var failed: Bool
        var subject: String
    }

    private struct State {
        /// Open for the rest of the run: the destination is absent or blocked, or failing past the wait limit.
        var final: DeliveryFailure?
        var window: [Outcome] = []
        /// Open for failing since (nil: closed); the first time in this run it opened (the wait limit's start).
        var failingSince: Date?
        /// Time spent failing in this run before `failingSince` (the wait limit counts it all).
        var failedBefore: TimeInterval = 0
        var failure: DeliveryFailure?
        var coolDownUntil: Date = .distantPast
        /// Trials failed since it opened (each doubles the next cool-down: ``RetryPolicy/doubling(_:first:cap:)``).
        var failedTrials = 0
        var trialInFlight = false
        var handlers: [@Sendable () -> Void] = []
        var trials = 0
    }

    /// How long a run waits for a failing destination's trials, in all, before its files wait for a later run.
    public let waitLimit: Duration
    /// Different files among the failures in the window before it can open: five, or as many as are sent at once
    /// when that is fewer (at least two: one file that keeps failing is that file's failure).
    public let minimumFiles: Int
    let clock: any SyncClock
    private let state: Mutex<State>

    public init(waitLimit: Duration = DeliverySettings.builtIn.unavailableWait, concurrency: Int = 8, clock: any SyncClock = SystemClock()) {
        self.waitLimit = waitLimit
        self.minimumFiles = min(CircuitBreaker.minimumFilesAtMost, max(2, concurrency))
        self.clock = clock
        self.state = Mutex(State())
    }

    /// The failure that opened the breaker for the rest of the run, or nil while it is closed or only cooling down.
    public var failure: DeliveryFailure? { state.withLock { $0.final } }

    /// Whether the destination is out for the rest of the run.
    public var isOpen: Bool { failure != nil }

    /// Whether attempts are held back now for a failing destination (open for a cool-down, or half-open).
    public var isFailing: Bool { state.withLock { $0.final == nil && $0.failingSince != nil } }

    /// How long until the next trial may start while failing (zero when closed, out for the run, or due).
    public var coolDownLeft: Duration {
        let now = clock.now()
        return state.withLock { state in
            guard state.final == nil, state.failingSince != nil else { return .zero }
            return .milliseconds(Int64(max(0, state.coolDownUntil.timeIntervalSince(now)) * 1000))
        }
    }

    /// How many half-open trials were started in this run.
    public var trials: Int { state.withLock { $0.trials } }

    /// Opens the breaker for the rest of the run (the first failure stays the reason) and ends the uploads in
    /// flight. Returns the failure in force.
    @discardableResult
    public func trip(_ failure: DeliveryFailure) -> DeliveryFailure {
        var scoped = failure
        scoped.scope = .destination
        let (reason, handlers): (DeliveryFailure, [@Sendable () -> Void]) = state.withLock { state in
            if let final = state.final { return (final, []) }
            state.final = scoped
            defer { state.handlers.removeAll() }
            return (scoped, state.handlers)
        }
        for handler in handlers { handler() }
        return reason
    }

    /// Runs `handler` when the breaker opens for the rest of the run (at once when it is open already).
    public func onTrip(_ handler: @escaping @Sendable () -> Void) {
        let openAlready: Bool = state.withLock { state in
            if state.final != nil { return true }
            state.handlers.append(handler)
            return false
        }
        if openAlready { handler() }
    }

    /// Waits until an attempt may start: at once while closed; while failing, until the cool-down has passed and
    /// this caller gets the trial, or another caller's trial closed it. Gives up (``Admission/stop(_:)``) once
    /// trials went on past ``waitLimit``, opening the breaker for the rest of the run.
    public func admit(isCancelled: @Sendable () -> Bool) async -> Admission {
        while true {
            if isCancelled() || Task.isCancelled { return .cancelled }
            let now = clock.now()
            enum Step { case admit(Admission), giveUp(DeliveryFailure), sleep(Duration) }
            let step: Step = state.withLock { state in
                if let final = state.final { return .admit(.stop(final)) }
                guard let since = state.failingSince else { return .admit(.go) }
                if state.failedBefore + now.timeIntervalSince(since) >= waitLimit.seconds, !state.trialInFlight {
                    return .giveUp(state.failure ?? DeliveryFailure(message: "failing", failureClass: .retryable(), attempts: 0))
                }
                if state.trialInFlight { return .sleep(.milliseconds(50)) }
                if now >= state.coolDownUntil {
                    state.trialInFlight = true
                    state.trials += 1
                    return .admit(.trial)
                }
                let left = state.coolDownUntil.timeIntervalSince(now)
                return .sleep(.milliseconds(Int64(min(left, 0.25) * 1000) + 1))
            }
            switch step {
            case .admit(let admission):
                return admission
            case .giveUp(let failure):
                var outage = failure
                outage.message = "no trial attempt succeeded within unavailable_wait (\(waitLimit.syncgateText)); \(failure.message)"
                return .stop(trip(outage))
            case .sleep(let duration):
                if (try? await clock.sleep(for: duration)) == nil { return .cancelled }
            }
        }
    }

    /// An attempt succeeded: it counts in the window, and a failing destination is closed again (any success shows
    /// that it works).
    public func succeeded(subject: String = "", trial: Bool = false) {
        let now = clock.now()
        state.withLock { state in
            CircuitBreaker.close(&state, at: now)
            if trial { state.trialInFlight = false }
            CircuitBreaker.push(Outcome(failed: false, subject: subject), into: &state.window)
        }
    }

    /// An attempt ended without saying anything about the destination's health (the file was refused for its own
    /// reason, it changed while sent, it was throttled or cancelled): a trial's slot is free again, and a trial the
    /// destination answered closes the breaker.
    public func ended(trial: Bool, answered: Bool) {
        guard trial else { return }
        let now = clock.now()
        state.withLock { state in
            state.trialInFlight = false
            if answered { CircuitBreaker.close(&state, at: now) }
        }
    }

    private static func close(_ state: inout State, at now: Date) {
        guard let since = state.failingSince else { return }
        state.failedBefore += max(0, now.timeIntervalSince(since))
        state.failingSince = nil
        state.failure = nil
        state.failedTrials = 0
        state.window.removeAll()
    }

    /// A retryable failure of one attempt (about `subject`: a file, a remote name). Opens the breaker for a
    /// cool-down when the failure rate says the destination is failing; a failed trial opens it again, for twice
    /// as long. Returns whether attempts are now held back (the failure then says nothing about the file: its
    /// retry is not spent).
    @discardableResult
    public func failed(subject: String, _ failure: DeliveryFailure, trial: Bool = false) -> Bool {
        let now = clock.now()
        return state.withLock { state in
            if state.final != nil { return true }
            CircuitBreaker.push(Outcome(failed: true, subject: subject), into: &state.window)
            if trial {
                state.trialInFlight = false
                state.failedTrials += 1
                state.coolDownUntil = now.addingTimeInterval(CircuitBreaker.coolDown(state.failedTrials, failure).seconds)
                state.failure = CircuitBreaker.describe(state.window, last: failure, trialFailed: true)
                return true
            }
            if state.failingSince != nil { return true }
            guard CircuitBreaker.isFailing(state.window, minimumFiles: minimumFiles) else { return false }
            state.failingSince = now
            state.failedTrials = 0
            state.coolDownUntil = now.addingTimeInterval(CircuitBreaker.coolDown(0, failure).seconds)
            state.failure = CircuitBreaker.describe(state.window, last: failure, trialFailed: false)
            return true
        }
    }

    /// The cool-down after `failedTrials` failed trials: 1 s doubling up to 8 s, a server's Retry-After the least.
    private static func coolDown(_ failedTrials: Int, _ failure: DeliveryFailure) -> Duration {
        RetryPolicy.atLeast(RetryPolicy.doubling(failedTrials + 1, first: firstCoolDown, cap: maximumCoolDown), failure.failureClass.retryAfter)
    }

    private static func push(_ outcome: Outcome, into window: inout [Outcome]) {
        window.append(outcome)
        if window.count > windowSize { window.removeFirst(window.count - windowSize) }
    }

    /// Whether the window says "failing": enough attempts, over enough files, mostly failed.
    private static func isFailing(_ window: [Outcome], minimumFiles: Int) -> Bool {
        guard window.count >= minimumAttempts else { return false }
        let failures = window.filter(\.failed)
        guard Double(failures.count) >= failureRate * Double(window.count) else { return false }
        return Set(failures.map(\.subject)).count >= minimumFiles
    }

    private static func describe(_ window: [Outcome], last: DeliveryFailure, trialFailed: Bool) -> DeliveryFailure {
        let failures = window.filter(\.failed)
        let files = Set(failures.map(\.subject)).count
        var outage = last
        outage.scope = .destination
        outage.failureClass = .retryable(after: last.failureClass.retryAfter)
        outage.message = "\(failures.count) of the last \(window.count) attempts failed, over \(files) files"
            + (trialFailed ? ", and a trial failed" : "") + "; the last: \(last.message)"
        return outage
    }
}
