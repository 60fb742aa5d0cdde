import Foundation
import SyncgateCore
import Testing

/// The decisions of the one retry policy at their edges: what is retried, after how long, and what gives up.
@Suite("retry policy: what comes after a failed attempt")
struct RetryPolicyTests {
    let settings = RetrySettings(file: 2, artwork: 0, baseDelay: .seconds(1), maxDelay: .seconds(8), jitter: .none,
                                 maxRetryInterval: .seconds(3600), giveUpAfter: .seconds(86400))

    func policy(retries: Int) -> RetryPolicy {
        RetryPolicy(settings: settings, retries: retries, deferredLimit: .seconds(2))
    }

    func failure(_ failureClass: FailureClass, scope: FailureScope = .file) -> DeliveryFailure {
        DeliveryFailure(message: "HTTP 500", failureClass: failureClass, scope: scope, code: "InternalError", attempts: 1)
    }

    /// Decides one failed attempt after another (the attempt count kept as the loop keeps it).
    func decisions(_ policy: RetryPolicy, _ attempts: [RetryPolicy.Attempt]) -> [RetryPolicy.Decision] {
        var tally = RetryPolicy.Tally()
        return attempts.map { attempt in
            tally.attempts += 1
            return policy.decide(attempt, tally: &tally)
        }
    }

    func retried(_ failure: DeliveryFailure, after delay: Duration) -> RetryPolicy.Decision { .retry(failure, after: delay) }

    @Test func zeroRetriesDisablesRetrying() {
        let busy = failure(.retryable())
        #expect(decisions(policy(retries: 0), [.init(failure: busy)]) == [.fail(busy)])
    }

    @Test func theLastAllowedAttemptIsTheOneAfterTheLastRetry() {
        let busy = failure(.retryable())
        let ds = decisions(policy(retries: 2), Array(repeating: .init(failure: busy), count: 3))
        #expect(ds == [retried(busy, after: .seconds(1)), retried(busy, after: .seconds(2)), .fail(busy)])
        // Past the cap the doubling stops at max_delay.
        let long = decisions(policy(retries: 6), Array(repeating: .init(failure: busy), count: 6))
        let waits: [Duration] = long.map { decision -> Duration in
            if case .retry(_, let delay) = decision { return delay }
            return .zero
        }
        #expect(waits == [1, 2, 4, 8, 8, 8].map { Duration.seconds($0) })
    }

    @Test func aPermanentFailureIsNeverRetried() {
        let refused = failure(.permanent)
        #expect(decisions(policy(retries: 5), [.init(failure: refused)]) == [.fail(refused)])
        // Not even while the task is being cancelled: it is reported as what it is.
        #expect(decisions(policy(retries: 5), [.init(failure: refused, interrupted: true)]) == [.fail(refused)])
        // Nor a file that changed while it was sent, whatever the retries left.
        let changed = failure(.retryable())
        #expect(decisions(policy(retries: 5), [.init(failure: changed, fileChanged: true)]) == [.fail(changed)])
    }

    @Test func aRetryAfterIsTheLeastWaitUpToTheMaximumWaitAndLongerIsScheduled() {
        let p = policy(retries: 2)
        #expect(p.maximumWait == .seconds(60), "max_delay (8 s), at least a minute")
        // Longer than max_delay, within the maximum wait: waited for (the cap bounds the backoff, not the server).
        let thirty = failure(.retryable(after: .seconds(30)))
        #expect(decisions(p, [.init(failure: thirty)]) == [retried(thirty, after: .seconds(30))])
        let sixty = failure(.retryable(after: .seconds(60)))
        #expect(decisions(p, [.init(failure: sixty)]) == [retried(sixty, after: .seconds(60))])
        // Longer than that: no sleep; failed now, the next run no sooner.
        let long = failure(.retryable(after: .seconds(61)))
        var scheduled = long
        scheduled.retryAfter = .seconds(61)
        #expect(decisions(p, [.init(failure: long)]) == [.fail(scheduled)])
        // Even with no retry left: a short Retry-After does not buy one.
        #expect(decisions(policy(retries: 0), [.init(failure: thirty)]) == [.fail(thirty)])
    }

    @Test func cancellationEndsItWithoutARetry() {
        let busy = failure(.retryable())
        #expect(decisions(policy(retries: 5), [.init(failure: busy, interrupted: true)]) == [.cancelled])
        // A destination-scoped failure while cancelled says nothing about the destination.
        let refused = failure(.retryable(), scope: .destination)
        #expect(decisions(policy(retries: 5), [.init(failure: refused, interrupted: true)]) == [.cancelled])
    }

    @Test func theDestinationsFailuresWaitForItAndSpendNoRetry() {
        let p = policy(retries: 1)
        let away = failure(.retryable(), scope: .destination)
        #expect(decisions(p, [.init(failure: away)]) == [.waitForDestination(away)])
        let blocked = failure(.permanent, scope: .destination)
        #expect(decisions(p, [.init(failure: blocked)]) == [.waitForDestination(blocked)])
        // Throttled: a pause, the server's Retry-After or the backoff (counted per throttle, not per retry).
        let slowDown = failure(.deferred(), scope: .destination)
        let told = failure(.deferred(after: .seconds(5)), scope: .destination)
        #expect(decisions(p, [.init(failure: slowDown), .init(failure: told), .init(failure: slowDown)])
            == [.pause(slowDown, for: .seconds(1)), .pause(told, for: .seconds(5)), .pause(slowDown, for: .seconds(4))])
        // The breaker holds a failing destination: the attempt waits for its trial, the retry is not spent.
        var tally = RetryPolicy.Tally()
        let busy = failure(.retryable())
        guard case .holdForTrial(let held, let coolDown) = p.decide(.init(failure: busy, breakerCoolDown: .seconds(2)), tally: &tally) else {
            Issue.record("expected a hold for the trial")
            return
        }
        #expect(coolDown == .seconds(2) && held.failureClass == .deferred(after: .seconds(2)))
        #expect(held.message.hasPrefix("the destination is failing"))
        #expect(tally.retriesUsed == 0)
        #expect(p.decide(.init(failure: busy), tally: &tally) == retried(busy, after: .seconds(1)))
    }

    @Test func deferredAnswersAreWaitedForUpToALimitThenSpendRetries() {
        let notYet = failure(.deferred(after: .seconds(1)))
        let ds = decisions(policy(retries: 1), Array(repeating: .init(failure: notYet), count: 4))
        // 2 s of deferred waits (the limit), then the one retry (the backoff, at least the 1 s asked), then failed.
        #expect(ds == [retried(notYet, after: .seconds(1)), retried(notYet, after: .seconds(1)),
                       retried(notYet, after: .seconds(1)), .fail(notYet)])
    }

    @Test func aNewConnectionStartsTheCountAfreshUpToACap() {
        let p = policy(retries: 1)
        let busy = failure(.retryable())
        var tally = RetryPolicy.Tally()
        var outcomes: [Bool] = []
        for connection in 0..<20 {
            tally.attempts += 1
            let decision = p.decide(.init(failure: busy, connection: connection), tally: &tally)
            if case .retry = decision { outcomes.append(true) } else { outcomes.append(false); break }
        }
        // (retries + 1) * 4 attempts at most, each on a new connection.
        #expect(outcomes.count == 2 * RetryPolicy.connectionResetLimit)
        #expect(outcomes.last == false)
    }

    // MARK: - The arithmetic, once

    @Test func everyDoublingWaitIsTheSameSeries() {
        #expect((1...8).map { RetryPolicy.doubling($0, first: .seconds(1), cap: .seconds(20)) }
            == [1, 2, 4, 8, 16, 20, 20, 20].map { Duration.seconds($0) })
        #expect(RetryPolicy.doubling(0, first: .seconds(3), cap: .seconds(20)) == .seconds(3), "n below 1 is the first")
        #expect(RetryPolicy.doubling(10_000, first: .seconds(1), cap: .seconds(7)) == .seconds(7))
        // Plugin restarts: none before the first failure, then 0.25 s doubling up to 10 s.
        #expect(RetryPolicy.restartDelay(failures: 0) == .zero)
        #expect((1...7).map { RetryPolicy.restartDelay(failures: $0) }
            == [250, 500, 1000, 2000, 4000, 8000, 10_000].map { Duration.milliseconds($0) })
        #expect(RetryPolicy.restartDelay(failures: 500) == .seconds(10))
    }

    @Test func aLaterRunRetriesAFailedFileOnTheRunSchedule() {
        let p = RetryPolicy(settings: settings)
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        let busy = failure(.retryable())
        #expect(p.nextRun(after: busy, failedRuns: 1, firstFailedAt: t0, now: t0) == t0 + 60)
        #expect(p.nextRun(after: busy, failedRuns: 3, firstFailedAt: t0, now: t0 + 10) == t0 + 10 + 240)
        #expect(p.nextRun(after: busy, failedRuns: 40, firstFailedAt: t0, now: t0 + 10) == t0 + 10 + 3600)
        var asked = busy
        asked.retryAfter = .seconds(7200)
        #expect(p.nextRun(after: asked, failedRuns: 1, firstFailedAt: t0, now: t0) == t0 + 7200, "no sooner than Retry-After")
        #expect(p.nextRun(after: failure(.permanent), failedRuns: 1, firstFailedAt: t0, now: t0) == nil)
        #expect(p.nextRun(after: busy, failedRuns: 9, firstFailedAt: t0, now: t0 + 86400) == nil, "given up after give_up_after")
        #expect(p.nextRun(after: busy, failedRuns: 9, firstFailedAt: t0, now: t0 + 86399) != nil)
    }
}
