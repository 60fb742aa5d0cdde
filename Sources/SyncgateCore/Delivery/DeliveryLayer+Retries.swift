import Foundation

extension DeliveryLayer {
    /// The one retry loop of a destination: uploads, batch deletes, single deletes and a mirror's deletes all go
    /// through it (Vector's split: the loop is written once; what differs is only the work and what is reported).
    ///
    /// Before each attempt it waits while the destination throttles, for the destination's pacing, and for the
    /// ``CircuitBreaker`` (closed, or this attempt is a half-open trial). After a failure it decides:
    /// - destination-scoped: throttling pauses the destination (no retry spent; past `throttle_wait` it is out for
    ///   the run); anything else opens the breaker for the rest of the run: the work waits;
    /// - a retryable failure while the destination is failing (the breaker's failure rate) spends no retry: the work
    ///   waits for a trial;
    /// - permanent, or a changed file: failed at once;
    /// - a Retry-After longer than ``maximumWait``: failed now, scheduled no sooner (``DeliveryFailure/retryAfter``);
    /// - deferred (the destination asks this one piece of work to wait): waited for, bounded by the attempt timeout;
    /// - retryable: up to `retries` retries with backoff and jitter (the count starts afresh, a bounded number of
    ///   times, on a new connection).
    ///
    /// `subject` names the work for the breaker's window (a file, a remote name). `work` gets the attempt number
    /// (from 1); it may throw a ``DeliveryFailure`` to say itself how an attempt failed.
    /// `slots`, when given, bound the attempts in flight (a file waiting out its backoff holds none).
    public func withRetries<Value: Sendable>(
        subject: String, retries: Int, pacing: RetryPacing, cancellation: CancellationHandle,
        slots: AttemptSlots? = nil,
        started: (Int) async -> Void = { _ in },
        retrying: (Int, DeliveryFailure, Duration) async -> Void = { _, _, _ in },
        _ work: (Int) async throws -> Value
    ) async -> RetryOutcome<Value> {
        // Failure counts start afresh on a new connection, but a run never makes more than this many attempts.
        let attemptCap = (retries + 1) * DeliveryLayer.connectionResetLimit
        var attempt = 0
        var retriesUsed = 0
        var deferredWait = Duration.zero
        var throttles = 0
        var generationOfLastFailure: Int? = nil
        let isCancelled: @Sendable () -> Bool = { cancellation.isCancelled || Task.isCancelled }

        while true {
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
            attempt += 1
            await started(attempt)
            let failure: DeliveryFailure
            let error: any Error
            do {
                let value = try await work(attempt)
                slots?.release()
                breaker.succeeded(subject: subject, trial: trial)
                throttle.succeeded()
                return .done(value, attempts: attempt)
            } catch let caught {
                slots?.release()
                error = caught
                failure = describeFailure(caught, attempt: attempt)
            }
            let interrupted = isCancelled()
            let failureClass = failure.failureClass
            // The destination went away while this attempt ran (here, or in another attempt that opened the breaker
            // and ended this one): the attempt says nothing about the work.
            if let open = breaker.failure {
                breaker.ended(trial: trial, answered: false)
                return .waiting(open, attemptCut: true)
            }
            if failure.scope == .destination && !interrupted {
                breaker.ended(trial: trial, answered: failureClass.isDeferred)
                if case .deferred(let after) = failureClass {
                    throttles += 1
                    let delay = after ?? backoff.delay(forRetry: throttles)
                    if throttle.throttled(for: delay) {
                        await retrying(attempt, failure, delay)
                        continue
                    }
                    var outage = failure
                    outage.failureClass = .retryable(after: after)
                    outage.message = "throttled for more than throttle_wait (\(settings.throttleWait.syncgateText)) in all; the last answer: \(failure.message)"
                    return .waiting(breaker.trip(outage), attemptCut: true)
                }
                return .waiting(breaker.trip(failure), attemptCut: true)
            }
            let changed = error is FileChangedError
            if case .retryable = failureClass, !interrupted, !changed {
                // Counted in the breaker's window. While the destination is failing, the failure is the
                // destination's, not this work's: no retry is spent, the work waits for a trial.
                if breaker.failed(subject: subject, failure, trial: trial) {
                    // Reported as deferred: the destination holds this work back, no retry is spent.
                    let left = breaker.coolDownLeft
                    var held = failure
                    held.failureClass = .deferred(after: left)
                    held.message = "the destination is failing, waiting for a trial attempt: \(failure.message)"
                    await retrying(attempt, held, left)
                    continue
                }
            } else {
                breaker.ended(trial: trial, answered: !interrupted)
            }
            if failureClass.isRetryable {
                let generation = await destination.connectionGeneration
                if let previous = generationOfLastFailure, previous != generation, attempt < attemptCap { retriesUsed = 0 }
                generationOfLastFailure = generation
            }
            if changed {
                // Sending the same planned version again cannot help: the next run plans the new content.
                return .failed(failure)
            }
            if case .retryable(let after?) = failureClass, after > maximumWait, !interrupted {
                // Honoured by scheduling, not by sleeping: a later run tries again no sooner than asked.
                var scheduled = failure
                scheduled.retryAfter = after
                return .failed(scheduled)
            }
            switch failureClass {
            case .permanent:
                return .failed(failure)
            case .deferred(let after) where !interrupted && deferredWait < settings.attemptTimeout:
                // The destination asks to wait for this work: not a burnt retry, bounded by the attempt timeout in total.
                let delay = after ?? settings.retry.baseDelay
                deferredWait += delay
                await retrying(attempt, failure, delay)
                _ = try? await clock.sleep(for: delay)
            case .retryable(let after) where !interrupted && retriesUsed < retries,
                .deferred(let after) where !interrupted && retriesUsed < retries:
                retriesUsed += 1
                let delay = backoff.delay(forRetry: retriesUsed, retryAfter: after)
                await retrying(attempt, failure, delay)
                _ = try? await clock.sleep(for: delay)  // cancelled: the checks at the top end it
            default:
                return interrupted ? .cancelled(attempts: attempt) : .failed(failure)
            }
        }
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
