/// The delivery keys every destination has (`defaults:` and per-destination overrides).
public struct DeliverySettings: Sendable, Hashable {
    /// Uploads in flight at once for one destination.
    public var concurrency: Int
    public var retry: RetrySettings
    /// How long a completed operation stays in the recently-completed list.
    public var recentCompleted: Duration
    /// How long a failed operation stays in the recently-failed list.
    public var recentFailed: Duration
    /// Longest one attempt (one upload of one file) may take.
    public var attemptTimeout: Duration

    public static let builtIn = DeliverySettings(
        concurrency: 4, retry: .builtIn, recentCompleted: .seconds(10), recentFailed: .seconds(60),
        attemptTimeout: .seconds(600)
    )

    public init(concurrency: Int, retry: RetrySettings, recentCompleted: Duration, recentFailed: Duration, attemptTimeout: Duration) {
        self.concurrency = concurrency
        self.retry = retry
        self.recentCompleted = recentCompleted
        self.recentFailed = recentFailed
        self.attemptTimeout = attemptTimeout
    }
}

/// The delivery keys as written, every one optional.
struct DeliveryOverrides: Decodable, Sendable, Hashable {
    struct Recent: Decodable, Sendable, Hashable {
        var completed: ConfigDuration?
        var failed: ConfigDuration?
    }

    var concurrency: Int?
    var retry: RetryOverrides?
    var recent: Recent?
    var attemptTimeout: ConfigDuration?

    enum CodingKeys: String, CodingKey {
        case concurrency, retry, recent
        case attemptTimeout = "attempt_timeout"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        concurrency = try c.decodeIfPresent(Int.self, forKey: .concurrency)
        retry = try c.decodeIfPresent(RetryOverrides.self, forKey: .retry)
        recent = try c.decodeIfPresent(Recent.self, forKey: .recent)
        attemptTimeout = try c.decodeIfPresent(ConfigDuration.self, forKey: .attemptTimeout)
        if let concurrency, concurrency < 1 || concurrency > 256 {
            throw ConfigValueError("must be between 1 and 256", key: CodingKeys.concurrency)
        }
        if let attemptTimeout, attemptTimeout.duration <= .zero {
            throw ConfigValueError("must be > 0", key: CodingKeys.attemptTimeout)
        }
    }

    func applied(to base: DeliverySettings) -> DeliverySettings {
        var result = base
        if let concurrency { result.concurrency = concurrency }
        if let retry { result.retry = retry.applied(to: base.retry) }
        if let completed = recent?.completed { result.recentCompleted = completed.duration }
        if let failed = recent?.failed { result.recentFailed = failed.duration }
        if let attemptTimeout { result.attemptTimeout = attemptTimeout.duration }
        return result
    }
}
