/// A destination's `check:` keys: how `syncgate run` verifies it against the ledger (``Verifier``).
public struct CheckSettings: Sendable, Hashable {
    /// How often `syncgate run` verifies the destination (nil: never, the default; `syncgate check` any time).
    public var interval: Duration?
    /// Mark missing and different copies pending when a verification finds them (as `syncgate check --repair`).
    public var repair: Bool

    public static let builtIn = CheckSettings(interval: nil, repair: false)

    public init(interval: Duration?, repair: Bool) {
        self.interval = interval
        self.repair = repair
    }
}

/// The `check:` mapping as written (every key optional, merged over the defaults).
struct CheckOverrides: Decodable, Sendable, Hashable {
    /// `interval: 1d`; `off` (or 0) turns a default interval off.
    var interval: ConfigDuration?
    var intervalOff = false
    var repair: Bool?

    enum CodingKeys: String, CodingKey {
        case interval, repair
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if (try? c.decodeIfPresent(String.self, forKey: .interval)) == "off" {
            intervalOff = true
        } else {
            interval = try c.decodeIfPresent(ConfigDuration.self, forKey: .interval)
        }
        repair = try c.decodeIfPresent(Bool.self, forKey: .repair)
        if let interval, interval.duration != .zero, interval.duration < .seconds(60) {
            throw ConfigValueError("must be at least 1m (each verification lists the whole destination), or off", key: CodingKeys.interval)
        }
    }

    func applied(to base: CheckSettings) -> CheckSettings {
        var result = base
        if intervalOff || interval?.duration == .zero {
            result.interval = nil
        } else if let interval {
            result.interval = interval.duration
        }
        if let repair { result.repair = repair }
        return result
    }
}
