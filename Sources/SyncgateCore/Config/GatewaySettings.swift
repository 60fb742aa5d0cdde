/// The `gateway:` keys: how `syncgate run` watches its sources.
public struct GatewaySettings: Sendable, Hashable {
    /// A file is sent once it has not changed for this long (so that half-written files are not sent).
    public var settle: Duration
    /// A full walk of every source this often, whatever the watches say (a safety net).
    public var rescanInterval: Duration

    public static let builtIn = GatewaySettings(settle: .seconds(1), rescanInterval: .seconds(600))

    public init(settle: Duration, rescanInterval: Duration) {
        self.settle = settle
        self.rescanInterval = rescanInterval
    }
}

/// The `gateway:` mapping as written.
struct RawGatewaySettings: Decodable {
    var settle: ConfigDuration?
    var rescanInterval: ConfigDuration?

    enum CodingKeys: String, CodingKey {
        case settle
        case rescanInterval = "rescan_interval"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        settle = try c.decodeIfPresent(ConfigDuration.self, forKey: .settle)
        rescanInterval = try c.decodeIfPresent(ConfigDuration.self, forKey: .rescanInterval)
        if let settle, settle.duration < .zero || settle.duration > .seconds(3600) {
            throw ConfigValueError("must be between 0s and 1h", key: CodingKeys.settle)
        }
        if let rescanInterval, rescanInterval.duration < .seconds(1) {
            throw ConfigValueError("must be at least 1s", key: CodingKeys.rescanInterval)
        }
    }

    var settings: GatewaySettings {
        GatewaySettings(settle: settle?.duration ?? GatewaySettings.builtIn.settle,
                        rescanInterval: rescanInterval?.duration ?? GatewaySettings.builtIn.rescanInterval)
    }
}
