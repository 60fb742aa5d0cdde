/// The names of one batch delete as it goes through the retry loop: which are still to be deleted, and which were
/// refused for good (``DeliveryLayer/deleteMany(_:cancellation:)`` with a destination that deletes in batches).
struct BatchDeletion {
    /// Still to be deleted (the next attempt sends these).
    private(set) var remaining: [String]
    /// Refused for good, or retryably by the last attempt.
    private var refused: [String: DeliveryFailure] = [:]

    init(_ names: [String]) {
        remaining = names
    }

    /// Takes one attempt's answer (the names it did not delete, with why). Returns the failure to retry the
    /// attempt with when some were refused retryably (the longest Retry-After among them), nil when nothing is
    /// left to retry.
    mutating func settle(_ answer: [String: DestinationError], attempt: Int) -> DeliveryFailure? {
        var retry: [String] = []
        var after: Duration? = nil
        var last: DeliveryFailure? = nil
        for name in remaining {
            guard let error = answer[name] else { continue }
            let failure = DeliveryFailure(message: error.description, failureClass: error.failureClass, scope: .file, code: error.code, attempts: attempt)
            refused[name] = failure
            if error.failureClass.isRetryable {
                retry.append(name)
                last = failure
                if let a = error.failureClass.retryAfter { after = max(after ?? .zero, a) }
            }
        }
        remaining = retry
        guard var failure = last else { return nil }
        failure.message = "\(retry.count) of the batch's names not deleted; the last: \(failure.message)"
        failure.failureClass = .retryable(after: after)
        return failure
    }

    /// The per-name error map once the loop ended with `outcome`: the names refused for good, and, unless the
    /// loop ended done, every name left with the loop's failure (or its own last refusal).
    func failures(after outcome: RetryOutcome<Void>) -> [String: DeliveryFailure] {
        var result = refused.filter { !remaining.contains($0.key) }
        result = result.filter { !$0.value.failureClass.isRetryable }
        guard let failure = outcome.failure else { return result }
        for name in remaining {
            if case .failed = outcome, let own = refused[name] { result[name] = own } else { result[name] = failure }
        }
        return result
    }
}
