import Crypto
import Foundation
import Synchronization
import Yams

/// A configured destination: its decoded settings, the delivery settings that wrap it, and its plugin, built the
/// first time it is used (``destination``): commands that only read the ledger build none.
public struct DestinationConfig: Sendable {
    public var name: String
    public var type: String
    public var settings: DeliverySettings
    /// A digest of the destination's mapping as written, with the environment variables it names.
    public var configDigest: String
    /// Lines the plugin gave for `syncgate validate` (``DestinationSetup/describe(_:)``): where its credentials
    /// come from and the like, never a secret.
    public var details: [String] = []
    /// The folder on this machine it writes into (a local destination), and where the config sets it, for errors
    /// (``DestinationSetup/writesInto(_:key:)``).
    public var folder: (path: String, location: ConfigError)?
    /// Where its copies go, when its plugin says (``DestinationSetup/deliversTo(_:identity:)``).
    public var target: DestinationTarget?
    private let plugin: LazyDestination
    private let sharedLimits = SharedLimits()

    public init(name: String, type: String, settings: DeliverySettings, build: @escaping @Sendable () -> any Destination,
                configDigest: String = "") {
        self.name = name
        self.type = type
        self.settings = settings
        self.plugin = LazyDestination(build)
        self.configDigest = configDigest
    }

    public init(name: String, type: String, settings: DeliverySettings, destination: any Destination, configDigest: String = "") {
        self.init(name: name, type: type, settings: settings, build: { destination }, configDigest: configDigest)
    }

    /// The plugin, built on first use (once; every copy of this config shares it).
    public var destination: any Destination { plugin.instance }

    /// The order its files are sent in: its `order:` (or that of `defaults:`), else the plugin's own.
    public var order: DeliveryOrder { settings.order ?? destination.preferredOrder }

    /// Its `rate`, `min_interval` and `bandwidth` limits: one set for every copy of this config, so that every
    /// pass and command of the process that uses the destination shares them.
    public var limits: DeliveryLimits { sharedLimits.limits(for: settings) }

    /// Ends the plugin's session if it was built (a command that used it), and does nothing otherwise.
    public func finishIfBuilt() async {
        if let built = plugin.builtInstance { await built.finish() }
    }

    /// What a blocked destination's settings are compared by: its config (with the environment variables it names)
    /// and what its plugin uses beyond that (``Destination/settingsFingerprint``). A change unblocks it.
    public var fingerprint: String {
        let plugin = destination.settingsFingerprint
        if plugin.isEmpty { return configDigest }
        return SHA256.hash(data: Data((configDigest + "\u{0}" + plugin).utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// A digest of a destination's mapping: its keys and values in order, and the value of every `${VAR}` in them.
    /// The walk stops after ``digestBudget`` values, so an alias bomb in a destination costs nothing here (its
    /// config is refused anyway: ``ConfigDecoder`` bounds the values it reads the same way).
    static func digest(of node: Node, environment: [String: String]) -> String {
        var hash = SHA256()
        var names: Set<String> = []
        var budget = digestBudget
        func walk(_ node: Node) {
            guard budget > 0 else { return }
            budget -= 1
            switch node {
            case .scalar(let scalar):
                hash.update(data: Data(("s" + String(scalar.string.utf8.count) + ":" + scalar.string).utf8))
                names.formUnion(VariableExpansion.names(in: scalar.string))
            case .mapping(let mapping):
                hash.update(data: Data("m\(mapping.count){".utf8))
                for (key, value) in mapping {
                    walk(key)
                    walk(value)
                }
                hash.update(data: Data("}".utf8))
            case .sequence(let sequence):
                hash.update(data: Data("q\(sequence.count)[".utf8))
                for item in sequence { walk(item) }
                hash.update(data: Data("]".utf8))
            case .alias:
                hash.update(data: Data("a".utf8))
            }
        }
        walk(node)
        for name in names.sorted() { hash.update(data: Data("\u{0}\(name)=\(environment[name] ?? "")".utf8)) }
        return hash.finalize().map { String(format: "%02x", $0) }.joined()
    }

    static let digestBudget = 100_000
}

struct RawDestinationHead: Decodable {
    var name: String
    var type: String
    var delivery: DeliveryOverrides

    enum CodingKeys: String, CodingKey { case name, type }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        name = try c.decode(String.self, forKey: .name)
        type = try c.decode(String.self, forKey: .type)
        delivery = try DeliveryOverrides(from: decoder)
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }) else {
            throw ConfigValueError("must be letters, digits, '-', '_' or '.'", key: CodingKeys.name)
        }
    }
}

/// The limits of a destination, made for its settings the first time they are asked for (again if its settings
/// were changed since).
final class SharedLimits: Sendable {
    private let made = Mutex<DeliveryLimits?>(nil)

    func limits(for settings: DeliverySettings) -> DeliveryLimits {
        made.withLock { made in
            if let made, made.match(settings) { return made }
            let limits = DeliveryLimits(settings)
            made = limits
            return limits
        }
    }
}

/// A plugin built the first time it is asked for, from any thread.
final class LazyDestination: Sendable {
    private let build: @Sendable () -> any Destination
    /// Held while the plugin is built, so that it is built once.
    private let built = Mutex<(any Destination)?>(nil)

    init(_ build: @escaping @Sendable () -> any Destination) { self.build = build }

    var instance: any Destination {
        built.withLock { built in
            if let built { return built }
            let made = build()
            built = made
            return made
        }
    }

    var builtInstance: (any Destination)? { built.withLock { $0 } }
}
