import Foundation
import SyncgateCore

/// The keys of a `type: headunit` destination (the core owns `name`, `type`, `concurrency`, `retry`, `recent`,
/// `attempt_timeout`).
public struct HeadUnitConfig: Decodable, Sendable, Hashable {
    /// The app as the head unit knows it: `appName` and `appID` of RegisterAppInterface.
    public struct App: Decodable, Sendable, Hashable {
        public var name: String
        public var id: String

        enum CodingKeys: String, CodingKey {
            case name, id
        }

        public init(name: String, id: String) {
            self.name = name
            self.id = id
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            name = try container.decode(String.self, forKey: .name)
            id = try container.decode(String.self, forKey: .id)
            guard !name.trimmingCharacters(in: .whitespaces).isEmpty, name.count <= 100 else {
                throw ConfigValueError("must be 1 to 100 characters", key: CodingKeys.name)
            }
            guard !id.isEmpty, id.count <= 100 else { throw ConfigValueError("must be 1 to 100 characters", key: CodingKeys.id) }
        }
    }

    public var host: String
    public var port: Int
    public var app: App
    public var persistent: Bool
    public var icon: String?
    public var connectTimeout: ConfigDuration
    public var responseTimeout: ConfigDuration
    /// PutFile chunks of one file in flight at once.
    public var pipeline: Int
    /// `language`: the app's language (RegisterAppInterface `languageDesired`), one of the SDL spec's (`EN-US`).
    public var language: String = "EN-US"
    /// `hmi_language`: the language of what the app shows (`hmiDisplayLanguageDesired`); `language` unless set.
    public var hmiLanguage: String = "EN-US"

    public static let defaultPort = 12345

    enum CodingKeys: String, CodingKey {
        case host, port, app, persistent, icon
        case connectTimeout = "connect_timeout"
        case responseTimeout = "response_timeout"
        case pipeline
        case language
        case hmiLanguage = "hmi_language"
    }

    public init(
        host: String = "127.0.0.1", port: Int = HeadUnitConfig.defaultPort, app: App, persistent: Bool = true,
        icon: String? = nil, connectTimeout: ConfigDuration = ConfigDuration(.seconds(5)),
        responseTimeout: ConfigDuration = ConfigDuration(.seconds(10)), pipeline: Int = 16
    ) {
        self.host = host
        self.port = port
        self.app = app
        self.persistent = persistent
        self.icon = icon
        self.connectTimeout = connectTimeout
        self.responseTimeout = responseTimeout
        self.pipeline = pipeline
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        host = try container.decodeIfPresent(String.self, forKey: .host) ?? "127.0.0.1"
        guard !host.isEmpty else { throw ConfigValueError("must not be empty", key: CodingKeys.host) }
        port = try container.decodeIfPresent(Int.self, forKey: .port) ?? HeadUnitConfig.defaultPort
        guard (1...65535).contains(port) else { throw ConfigValueError("must be between 1 and 65535", key: CodingKeys.port) }
        app = try container.decode(App.self, forKey: .app)
        persistent = try container.decodeIfPresent(Bool.self, forKey: .persistent) ?? true
        icon = try container.decodeIfPresent(String.self, forKey: .icon)
        if let icon, icon.isEmpty { throw ConfigValueError("must not be empty", key: CodingKeys.icon) }
        connectTimeout = try container.decodeIfPresent(ConfigDuration.self, forKey: .connectTimeout) ?? ConfigDuration(.seconds(5))
        guard connectTimeout.duration > .zero else { throw ConfigValueError("must be more than 0s", key: CodingKeys.connectTimeout) }
        responseTimeout = try container.decodeIfPresent(ConfigDuration.self, forKey: .responseTimeout) ?? ConfigDuration(.seconds(10))
        guard responseTimeout.duration > .zero else { throw ConfigValueError("must be more than 0s", key: CodingKeys.responseTimeout) }
        pipeline = try container.decodeIfPresent(Int.self, forKey: .pipeline) ?? 16
        guard (1...64).contains(pipeline) else { throw ConfigValueError("must be between 1 and 64", key: CodingKeys.pipeline) }
        func spelled(_ key: CodingKeys) throws -> String? {
            guard let text = try container.decodeIfPresent(String.self, forKey: key) else { return nil }
            guard let named = SDLLanguage.named(text) else {
                throw ConfigValueError("'\(text)' is not a language of the SDL spec (\(SDLLanguage.all.prefix(6).joined(separator: ", ")), ...)", key: key)
            }
            return named
        }
        language = try spelled(.language) ?? "EN-US"
        hmiLanguage = try spelled(.hmiLanguage) ?? language
    }
}
