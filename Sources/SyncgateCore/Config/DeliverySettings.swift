/// The delivery keys every destination has (`defaults:` and per-destination overrides).
public struct DeliverySettings: Sendable, Hashable {
    /// Uploads in flight at once for one destination (the most: throttling lowers it for a while).
    public var concurrency: Int
    public var retry: RetrySettings
    /// How long a completed operation stays in the recently-completed list.
    public var recentCompleted: Duration
    /// How long a failed operation stays in the recently-failed list.
    public var recentFailed: Duration
    /// Longest one attempt (one upload of one file, with the checks that go with it) may take.
    public var attemptTimeout: Duration
    /// The most a run waits out a destination's throttling in all, before it leaves the rest pending.
    public var throttleWait: Duration
    /// The longest wait between two probes of an unavailable destination (by a gateway; a sync probes once at start).
    public var probeIntervalMax: Duration
    /// The most a run waits, in all, for a failing destination (most attempts failing, see ``CircuitBreaker``) to
    /// pass a trial attempt, before it leaves the rest pending.
    public var unavailableWait: Duration = .seconds(30)
    /// Requests syncgate starts at the destination (``DeliveryLimits``); nil: no limit.
    public var rate: RateLimit? = nil
    /// The least time between the starts of two uploads (zero: none).
    public var minInterval: Duration = .zero
    /// Bytes per second read from disk for all its uploads together; nil: no limit.
    public var bandwidth: BandwidthSchedule? = nil
    /// Delete the destination's copy of a file removed from its source (a mirror). Off by default.
    public var deleteRemote = false
    /// The most copies one run deletes at the destination; a run that would delete more deletes none (exit 1).
    public var maxDelete = 100
    /// Verification against the ledger (`check:`): by `syncgate run` every `interval`, repairing or not.
    public var check = CheckSettings.builtIn
    /// The order files are sent in (`order:`); nil: the destination's own (``Destination/preferredOrder``).
    public var order: DeliveryOrder? = nil

    public static let builtIn = DeliverySettings(
        concurrency: 4, retry: .builtIn, recentCompleted: .seconds(10), recentFailed: .seconds(60),
        attemptTimeout: .seconds(600), throttleWait: .seconds(120), probeIntervalMax: .seconds(60)
    )

    public init(concurrency: Int, retry: RetrySettings, recentCompleted: Duration, recentFailed: Duration, attemptTimeout: Duration,
                throttleWait: Duration = DeliverySettings.builtIn.throttleWait,
                probeIntervalMax: Duration = DeliverySettings.builtIn.probeIntervalMax) {
        self.concurrency = concurrency
        self.retry = retry
        self.recentCompleted = recentCompleted
        self.recentFailed = recentFailed
        self.attemptTimeout = attemptTimeout
        self.throttleWait = throttleWait
        self.probeIntervalMax = probeIntervalMax
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
    var throttleWait: ConfigDuration?
    var probeIntervalMax: ConfigDuration?
    var unavailableWait: ConfigDuration?
    var rate: RateSetting?
    var minInterval: ConfigDuration?
    var bandwidth: BandwidthSchedule?
    var deleteRemote: Bool?
    var maxDelete: Int?
    var check: CheckOverrides?
    var order: DeliveryOrder?

    enum CodingKeys: String, CodingKey {
        case concurrency, retry, recent, rate, bandwidth, check, order
        case deleteRemote = "delete_remote"
        case maxDelete = "max_delete"
        case attemptTimeout = "attempt_timeout"
        case throttleWait = "throttle_wait"
        case probeIntervalMax = "probe_interval_max"
        case unavailableWait = "unavailable_wait"
        case minInterval = "min_interval"
    }

    /// The keys above, which belong to the core in a destination's mapping.
    static let keys: Set<String> = [
        "concurrency", "retry", "recent", "attempt_timeout", "throttle_wait", "probe_interval_max", "unavailable_wait", "rate", "min_interval", "bandwidth",
        "delete_remote", "max_delete", "check", "order",
    ]

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        concurrency = try c.decodeIfPresent(Int.self, forKey: .concurrency)
        retry = try c.decodeIfPresent(RetryOverrides.self, forKey: .retry)
        recent = try c.decodeIfPresent(Recent.self, forKey: .recent)
        attemptTimeout = try c.decodeIfPresent(ConfigDuration.self, forKey: .attemptTimeout)
        throttleWait = try c.decodeIfPresent(ConfigDuration.self, forKey: .throttleWait)
        probeIntervalMax = try c.decodeIfPresent(ConfigDuration.self, forKey: .probeIntervalMax)
        unavailableWait = try c.decodeIfPresent(ConfigDuration.self, forKey: .unavailableWait)
        rate = try c.decodeIfPresent(RateSetting.self, forKey: .rate)
        minInterval = try c.decodeIfPresent(ConfigDuration.self, forKey: .minInterval)
        bandwidth = try c.decodeIfPresent(BandwidthSchedule.self, forKey: .bandwidth)
        deleteRemote = try c.decodeIfPresent(Bool.self, forKey: .deleteRemote)
        maxDelete = try c.decodeIfPresent(Int.self, forKey: .maxDelete)
        check = try c.decodeIfPresent(CheckOverrides.self, forKey: .check)
        order = try c.decodeIfPresent(DeliveryOrder.self, forKey: .order)
        if let maxDelete, maxDelete < 0 {
            throw ConfigValueError("must be >= 0 (0: delete nothing, only report)", key: CodingKeys.maxDelete)
        }
        if let concurrency, concurrency < 1 || concurrency > 256 {
            throw ConfigValueError("must be between 1 and 256", key: CodingKeys.concurrency)
        }
        if let attemptTimeout, attemptTimeout.duration <= .zero {
            throw ConfigValueError("must be > 0", key: CodingKeys.attemptTimeout)
        }
        if let throttleWait, throttleWait.duration < .zero {
            throw ConfigValueError("must be >= 0", key: CodingKeys.throttleWait)
        }
        if let unavailableWait, unavailableWait.duration < .zero {
            throw ConfigValueError("must be >= 0 (0: leave a failing destination's files pending at once)", key: CodingKeys.unavailableWait)
        }
        if let probeIntervalMax, probeIntervalMax.duration < .seconds(1) {
            throw ConfigValueError("must be at least 1s", key: CodingKeys.probeIntervalMax)
        }
    }

    func applied(to base: DeliverySettings) -> DeliverySettings {
        var result = base
        if let concurrency { result.concurrency = concurrency }
        if let retry { result.retry = retry.applied(to: base.retry) }
        if let completed = recent?.completed { result.recentCompleted = completed.duration }
        if let failed = recent?.failed { result.recentFailed = failed.duration }
        if let attemptTimeout { result.attemptTimeout = attemptTimeout.duration }
        if let throttleWait { result.throttleWait = throttleWait.duration }
        if let probeIntervalMax { result.probeIntervalMax = probeIntervalMax.duration }
        if let unavailableWait { result.unavailableWait = unavailableWait.duration }
        if let rate { result.rate = rate.limit }
        if let minInterval { result.minInterval = minInterval.duration }
        if let bandwidth { result.bandwidth = bandwidth.isOff ? nil : bandwidth }
        if let deleteRemote { result.deleteRemote = deleteRemote }
        if let maxDelete { result.maxDelete = maxDelete }
        if let check { result.check = check.applied(to: base.check) }
        if let order { result.order = order }
        return result
    }
}
