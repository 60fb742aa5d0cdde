/// How the delivery layer retries: counts per kind of file, backoff bounds and jitter, and how failed files are
/// rescheduled across runs.
public struct RetrySettings: Sendable, Hashable {
    public enum Jitter: String, Sendable, Hashable, Decodable, CaseIterable {
        /// Uniform between `base_delay` and the exponential bound.
        case full
        /// Half the exponential bound plus a uniform half.
        case equal
        /// Exactly the exponential bound.
        case none
    }

    /// Retries after the first attempt for files that are not artwork (0 disables).
    public var file: Int
    /// Retries after the first attempt for artwork (0 disables).
    public var artwork: Int
    public var baseDelay: Duration
    public var maxDelay: Duration
    public var jitter: Jitter
    /// Longest wait before a run re-attempts a file that failed in earlier runs.
    public var maxRetryInterval: Duration
    /// After this long failing, a file is retried only by `syncgate retry`.
    public var giveUpAfter: Duration

    public static let builtIn = RetrySettings(
        file: 1, artwork: 1, baseDelay: .seconds(1), maxDelay: .seconds(20), jitter: .full,
        maxRetryInterval: .seconds(3600), giveUpAfter: .seconds(7 * 86400)
    )

    public init(file: Int, artwork: Int, baseDelay: Duration, maxDelay: Duration, jitter: Jitter, maxRetryInterval: Duration, giveUpAfter: Duration) {
        self.file = file
        self.artwork = artwork
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.jitter = jitter
        self.maxRetryInterval = maxRetryInterval
        self.giveUpAfter = giveUpAfter
    }

    /// Retries allowed after the first attempt for this kind of file.
    public func retries(isArtwork: Bool) -> Int { isArtwork ? artwork : file }
}

/// The `retry:` mapping as written (every key optional, merged over the defaults).
struct RetryOverrides: Decodable, Sendable, Hashable {
    var file: Int?
    var artwork: Int?
    var baseDelay: ConfigDuration?
    var maxDelay: ConfigDuration?
    var jitter: RetrySettings.Jitter?
    var maxRetryInterval: ConfigDuration?
    var giveUpAfter: ConfigDuration?

    enum CodingKeys: String, CodingKey {
        case file, artwork, jitter
        case baseDelay = "base_delay"
        case maxDelay = "max_delay"
        case maxRetryInterval = "max_retry_interval"
        case giveUpAfter = "give_up_after"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        file = try c.decodeIfPresent(Int.self, forKey: .file)
        artwork = try c.decodeIfPresent(Int.self, forKey: .artwork)
        baseDelay = try c.decodeIfPresent(ConfigDuration.self, forKey: .baseDelay)
        maxDelay = try c.decodeIfPresent(ConfigDuration.self, forKey: .maxDelay)
        jitter = try c.decodeIfPresent(RetrySettings.Jitter.self, forKey: .jitter)
        maxRetryInterval = try c.decodeIfPresent(ConfigDuration.self, forKey: .maxRetryInterval)
        giveUpAfter = try c.decodeIfPresent(ConfigDuration.self, forKey: .giveUpAfter)
        for (key, value) in [(CodingKeys.file, file), (.artwork, artwork)] {
            if let value, value < 0 { throw ConfigValueError("must be >= 0", key: key) }
            if let value, value > 1000 { throw ConfigValueError("must be <= 1000", key: key) }
        }
        if let baseDelay, let maxDelay, maxDelay.duration < baseDelay.duration {
            throw ConfigValueError("must be >= base_delay (\(baseDelay))", key: CodingKeys.maxDelay)
        }
    }

    func applied(to base: RetrySettings) -> RetrySettings {
        var result = base
        if let file { result.file = file }
        if let artwork { result.artwork = artwork }
        if let baseDelay { result.baseDelay = baseDelay.duration }
        if let maxDelay { result.maxDelay = maxDelay.duration }
        if let jitter { result.jitter = jitter }
        if let maxRetryInterval { result.maxRetryInterval = maxRetryInterval.duration }
        if let giveUpAfter { result.giveUpAfter = giveUpAfter.duration }
        if result.maxDelay < result.baseDelay { result.maxDelay = result.baseDelay }
        return result
    }
}

extension RetrySettings.Jitter {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let value = RetrySettings.Jitter(rawValue: text) else {
            throw ConfigValueError("'\(text)' is not a jitter mode (full, equal, none)")
        }
        self = value
    }
}
