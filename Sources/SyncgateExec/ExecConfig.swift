import Foundation
import SyncgateCore
import SyncgateJSON

/// The keys of a `type: exec` destination, and of a `type: NAME` that resolves to a plugin program.
struct ExecConfig: Decodable {
    /// The program and its arguments (`type: exec` only).
    var command: [String]?
    /// Variables added to the plugin's environment.
    var env: [String: String]
    /// Handed to the plugin in `configure`.
    var settings: JSONValue
    var startTimeout: Duration
    var answerTimeout: Duration
    var cancelGrace: Duration
    /// The most a whole listing may take.
    var listTimeout: Duration
    /// One instance of a fleet at a time sends to this destination (for a plugin that does not declare it).
    var oneWriter: Bool

    enum CodingKeys: String, CodingKey {
        case command, env, settings
        case startTimeout = "start_timeout"
        case answerTimeout = "answer_timeout"
        case cancelGrace = "cancel_grace"
        case listTimeout = "list_timeout"
        case oneWriter = "one_writer"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        command = try c.decodeIfPresent([String].self, forKey: .command)
        env = try c.decodeIfPresent([String: String].self, forKey: .env) ?? [:]
        settings = try c.decodeIfPresent(SettingsValue.self, forKey: .settings)?.value ?? .object([:])
        if case .object = settings {} else { throw ConfigValueError("must be a mapping", key: CodingKeys.settings) }
        startTimeout = try c.decodeIfPresent(ConfigDuration.self, forKey: .startTimeout)?.duration ?? .seconds(30)
        answerTimeout = try c.decodeIfPresent(ConfigDuration.self, forKey: .answerTimeout)?.duration ?? .seconds(60)
        cancelGrace = try c.decodeIfPresent(ConfigDuration.self, forKey: .cancelGrace)?.duration ?? .seconds(2)
        listTimeout = try c.decodeIfPresent(ConfigDuration.self, forKey: .listTimeout)?.duration ?? PluginSpec.defaultListTimeout
        oneWriter = try c.decodeIfPresent(Bool.self, forKey: .oneWriter) ?? false
        for (key, value) in [(CodingKeys.startTimeout, startTimeout), (.answerTimeout, answerTimeout), (.cancelGrace, cancelGrace),
                             (.listTimeout, listTimeout)] where value <= .zero {
            throw ConfigValueError("must be more than 0", key: key)
        }
        for name in env.keys where !ExecConfig.isVariableName(name) {
            throw ConfigValueError("'\(name)' is not an environment variable name (letters, digits, '_'; not starting with a digit)", key: CodingKeys.env)
        }
        // Values under names that say they are secret are scrubbed from syncgate's output like any other secret.
        for (name, value) in env where ExecConfig.looksSecret(name) { Redactor.shared.register(value) }
        ExecConfig.registerSecrets(in: settings, key: nil)
    }

    static func isVariableName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }
    }

    /// Whether a key's name says its value is a secret (token, secret, password, key, credential, auth, cookie).
    static func looksSecret(_ name: String) -> Bool {
        let lower = name.lowercased()
        return ["token", "secret", "password", "passwd", "key", "credential", "auth", "cookie", "private"].contains { lower.contains($0) }
    }

    static func registerSecrets(in value: JSONValue, key: String?) {
        switch value {
        case .string(let text): if let key, looksSecret(key) { Redactor.shared.register(text) }
        case .array(let items): for item in items { registerSecrets(in: item, key: key) }
        case .object(let object): for member in object { registerSecrets(in: member.value, key: (key.map { $0 + "." } ?? "") + member.name) }
        default: break
        }
    }
}

/// A `settings:` value as the plugin gets it: mappings, lists, null, and every other scalar as a string (after
/// `${VAR}` expansion), exactly as written: `0123` stays `"0123"`, `yes` stays `"yes"`.
struct SettingsValue: Decodable {
    var value: JSONValue

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        if let mapping = try? decoder.container(keyedBy: AnyKey.self) {
            var object: [String: JSONValue] = [:]
            for key in mapping.allKeys {
                object[key.stringValue] = try mapping.decodeIfPresent(SettingsValue.self, forKey: key)?.value ?? .null
            }
            value = .object(sorting: object)
        } else if var list = try? decoder.unkeyedContainer() {
            var items: [JSONValue] = []
            while !list.isAtEnd {
                if try list.decodeNil() { items.append(.null) } else { items.append(try list.decode(SettingsValue.self).value) }
            }
            value = .array(items)
        } else {
            let single = try decoder.singleValueContainer()
            value = single.decodeNil() ? .null : .string(try single.decode(String.self))
        }
    }
}
