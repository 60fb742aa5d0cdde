/// How a piece of work given to the delivery layer's retry loop (``DeliveryLayer/withRetries(subject:policy:pacing:cancellation:slots:started:retrying:_:)``)
/// ended.
public enum RetryOutcome<Value: Sendable>: Sendable {
    /// Done, after this many attempts in this run.
    case done(Value, attempts: Int)
    /// Not done in this run: permanent, retries spent, a file changed while sent, or a Retry-After too long to wait
    /// for (the failure's `retryAfter` then says when to try again).
    case failed(DeliveryFailure)
    /// Not done because the destination is out for this run (unavailable or blocked: the failure says why).
    /// `attemptCut` when the last attempt ended with the destination: that attempt says nothing about the work.
    case waiting(DeliveryFailure, attemptCut: Bool)
    /// Stopped by cancellation.
    case cancelled(attempts: Int)

    /// The failure, for every outcome but ``done(_:attempts:)``.
    public var failure: DeliveryFailure? {
        switch self {
        case .done: nil
        case .failed(let failure), .waiting(let failure, _): failure
        case .cancelled(let attempts): .cancelled(attempts: attempts)
        }
    }
}

/// What a request of the retry loop waits for before it starts: an upload waits for `min_interval`, `rate` and
/// the bandwidth's schedule; any other request only for `rate`.
public enum RetryPacing: Sendable {
    case upload
    case request
}
