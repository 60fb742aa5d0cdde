import Foundation

extension DeliveryLayer {
    /// The retry policy of this destination for work allowed `retries` retries (`retry.file`, `retry.artwork`; 0
    /// disables): its backoff, jitter and Retry-After bounds come from the destination's `retry:` settings.
    public func policy(retries: Int) -> RetryPolicy {
        var policy = retryPolicy
        policy.retries = max(0, retries)
        return policy
    }

    /// The one retry loop of a destination: uploads, batch deletes, single deletes, a mirror's deletes and probes
    /// all go through it (Vector's split: the loop is written once, the ``RetryPolicy`` only decides; what differs
    /// is only the work and what is reported).
    ///
    /// Before each attempt it waits while the destination throttles, for the destination's pacing, and for the
    /// ``CircuitBreaker`` (closed, or this attempt is a half-open trial). After a failure it tells the breaker (a
    /// retryable failure counts in its window; a destination-scoped one trips it when the policy says the
    /// destination is away), asks `policy` what comes next, and acts: a backoff wait on the clock (ended at once by
    /// cancellation), a throttle pause (past `throttle_wait` the destination is out for the run), a wait for the
    /// breaker's trial, or the end.
    ///
    /// `subject` names the work for the breaker's window (a file, a remote name). `work` gets the attempt number
    /// (from 1); it may throw a ``DeliveryFailure`` to say itself how an attempt failed.
    /// `slots`, when given, bound the attempts in flight (a file waiting out its backoff holds none).
    public func withRetries<Value: Sendable>(
        subject: String, policy: RetryPolicy, pacing: RetryPacing, cancellation: CancellationHandle,
        slots: AttemptSlots? = nil,
        started: (Int) async -> Void = { _ in },
        retrying: (Int, DeliveryFailure, Duration) async -> Void = { _, _, _ in },
        _ work: (Int) async throws -> Value
    ) async -> RetryOutcome<Value> {
        var tally = RetryPolicy.Tally()
        let isCancelled: @Sendable () -> Bool = { cancellation.isCancelled || Task.isCancelled }

        while true {
            let attempt = tally.attempts
            // Its last attempt (if any) failed along with the destination: it is not counted.
            if let open = breaker.failure { return .waiting(open, attemptCut: attempt > 0) }
            if isCancelled() { return .cancelled(attempts: attempt) }
            do {
                try await throttle.waitWhilePaused()
                switch pacing {
                // Waiting for `min_interval` and `rate` is no attempt: it starts once they let it.
                case .upload: try await limits.beforeUpload(clock: clock, cancellation: cancellation)
                case .request: try await limits.beforeRequest(clock: clock, cancellation: cancellation)
                }
            } catch {
                continue  // cancelled while waiting: the checks above end it
            }
            let trial: Bool
            switch await breaker.admit(isCancelled: isCancelled) {
            case .go: trial = false
            case .trial: trial = true
            case .stop(let open): return .waiting(open, attemptCut: attempt > 0)
            case .cancelled: continue
            }
            if let open = breaker.failure {
                breaker.ended(trial: trial, answered: false)
                return .waiting(open, attemptCut: attempt > 0)
            }
            if let slots, await !slots.acquire() {
                breaker.ended(trial: trial, answered: false)
                continue  // cancelled while waiting for a slot
            }
            if isCancelled() {
                slots?.release()
                breaker.ended(trial: trial, answered: false)
                continue
            }
            tally.attempts += 1
            await started(tally.attempts)
            var failed: RetryPolicy.Attempt
            do {
                let value = try await work(tally.attempts)
                slots?.release()
                breaker.succeeded(subject: subject, trial: trial)
                throttle.succeeded()
                return .done(value, attempts: tally.attempts)
            } catch {
                slots?.release()
                failed = RetryPolicy.Attempt(failure: describeFailure(error, attempt: tally.attempts),
                                             fileChanged: error is FileChangedError, interrupted: isCancelled())
            }
            // The destination went away while this attempt ran (here, or in another attempt that opened the breaker
            // and ended this one): the attempt says nothing about the work.
            if let open = breaker.failure {
                breaker.ended(trial: trial, answered: false)
                return .waiting(open, attemptCut: true)
            }
            failed = await judge(failed, subject: subject, trial: trial)
            switch policy.decide(failed, tally: &tally) {
            case .waitForDestination(let failure):
                return .waiting(breaker.trip(failure), attemptCut: true)
            case .pause(let failure, let delay):
                guard throttle.throttled(for: delay) else {
                    return .waiting(breaker.trip(RetryPolicy.throttledTooLong(failure, throttleWait: settings.throttleWait)), attemptCut: true)
                }
                await retrying(tally.attempts, failure, delay)  // the throttle's pause is waited for at the top
            case .holdForTrial(let failure, let coolDown):
                await retrying(tally.attempts, failure, coolDown)  // the breaker's admission waits for the trial
            case .retry(let failure, let delay):
                await retrying(tally.attempts, failure, delay)
                await backOff(delay, cancellation: cancellation)  // cancelled: the checks at the top end it
            case .fail(let failure):
                return .failed(failure)
            case .cancelled:
                return .cancelled(attempts: tally.attempts)
            }
        }
    }

    /// Tells the breaker how an attempt failed (a trial's end, or a retryable failure in its window) and notes on
    /// `failed` what the policy needs of it: the cool-down when the breaker now holds the destination failing, and
    /// the connection a retryable failure came on.
    private func judge(_ failed: RetryPolicy.Attempt, subject: String, trial: Bool) async -> RetryPolicy.Attempt {
        var failed = failed
        let failureClass = failed.failure.failureClass
        if failed.failure.scope == .destination && !failed.interrupted {
            breaker.ended(trial: trial, answered: failureClass.isDeferred)
        } else if case .retryable = failureClass, !failed.interrupted, !failed.fileChanged {
            // Counted in the breaker's window. While the destination is failing, the failure is the destination's,
            // not this work's: the policy spends no retry.
            if breaker.failed(subject: subject, failed.failure, trial: trial) { failed.breakerCoolDown = breaker.coolDownLeft }
        } else {
            breaker.ended(trial: trial, answered: !failed.interrupted)
        }
        let awayOrThrottled = failed.failure.scope == .destination && !failed.interrupted
        if failureClass.isRetryable, !awayOrThrottled, failed.breakerCoolDown == nil {
            failed.connection = await destination.connectionGeneration
        }
        return failed
    }

    /// Waits out a backoff on the layer's clock; returns at once when the task or `cancellation` is cancelled.
    func backOff(_ delay: Duration, cancellation: CancellationHandle) async {
        let clock = self.clock
        let sleeper = Task { try await clock.sleep(for: delay) }
        let waking = cancellation.onCancel { sleeper.cancel() }
        await withTaskCancellationHandler {
            _ = try? await sleeper.value
        } onCancel: {
            sleeper.cancel()
        }
        cancellation.removeHandler(waking)
    }

    /// A failed attempt's error, classified (by the destination, or as it says itself when it is a
    /// ``DeliveryFailure``), its text redacted.
    func describeFailure(_ error: any Error, attempt: Int) -> DeliveryFailure {
        if var failure = error as? DeliveryFailure {
            failure.message = Redactor.shared.redact(failure.message)
            failure.attempts = attempt
            return failure
        }
        let classification = classify(error)
        return DeliveryFailure(
            message: Redactor.shared.redact(DeliveryLayer.describe(error)), failureClass: classification.failureClass,
            scope: classification.scope, code: (error as? DestinationError)?.code, attempts: attempt)
    }
}
