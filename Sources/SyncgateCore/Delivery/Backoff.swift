/// Exponential backoff with jitter, bounded by `base_delay` and `max_delay`.
///
/// The n-th retry (n from 1) waits at most `min(max_delay, base_delay * 2^(n-1))`; with full jitter the wait is
/// uniform between `base_delay` and that bound, with equal jitter between half the bound and the bound, without
/// jitter exactly the bound. A server's Retry-After is honoured as the least wait.
public struct Backoff: Sendable {
    public var settings: RetrySettings
    /// Returns a uniform value in the range (injectable for tests).
    public var random: @Sendable (ClosedRange<Double>) -> Double

    public init(settings: RetrySettings, random: @escaping @Sendable (ClosedRange<Double>) -> Double = { Double.random(in: $0) }) {
        self.settings = settings
        self.random = random
    }

    /// The exponential bound for retry `n` (1-based), before jitter.
    public func bound(forRetry n: Int) -> Duration {
        let base = settings.baseDelay.seconds
        let cap = settings.maxDelay.seconds
        let exponent = min(max(n - 1, 0), 62)
        let raw = base * pow2(exponent)
        return .milliseconds(Int64((min(cap, raw) * 1000).rounded()))
    }

    /// The wait before retry `n` (1-based).
    public func delay(forRetry n: Int, retryAfter: Duration? = nil) -> Duration {
        let upper = bound(forRetry: n).seconds
        let lower = min(settings.baseDelay.seconds, upper)
        let seconds: Double
        switch settings.jitter {
        case .none: seconds = upper
        case .full: seconds = upper > lower ? random(lower...upper) : upper
        case .equal: seconds = upper / 2 + (upper > 0 ? random(0...(upper / 2)) : 0)
        }
        var delay = Duration.milliseconds(Int64((seconds * 1000).rounded()))
        if let retryAfter, retryAfter > delay { delay = retryAfter }
        return delay
    }

    private func pow2(_ n: Int) -> Double {
        var value = 1.0
        for _ in 0..<n { value *= 2 }
        return value
    }
}
