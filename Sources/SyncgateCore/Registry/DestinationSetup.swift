import Foundation
import Logging
import Synchronization
import Yams

/// What a plugin's factory gets: the destination's name, where the config file lives, the environment, a
/// logger, and its own keys to decode. The core keys (`name`, `type`, `concurrency`, `retry`, `recent`,
/// `attempt_timeout`) are the core's; every other key of the destination's mapping is the plugin's, and a key
/// the plugin does not read is reported as unknown.
///
/// Unchecked: Yams' `Node` is not `Sendable`, but the tree is never changed after parsing; `decoder` is used by the
/// one thread that loads the config.
public struct DestinationSetup: @unchecked Sendable {
    public let name: String
    public let type: String
    /// Folder of the config file: resolve relative paths against it (``resolvePath(_:)``).
    public let baseDirectory: URL
    public let environment: [String: String]
    public let logger: Logger
    /// The folder of the state ledger (`state:`), where a plugin may keep what must outlive a run (a cached access
    /// token). It may not exist yet: the ledger creates it at the first run.
    public let stateDirectory: String
    let node: Node
    let path: [ConfigKey]
    let decoder: ConfigDecoder
    /// Set once ``decode(_:)`` has read the plugin's keys: an error after that is about their values together,
    /// and a key nobody read is then surely unknown.
    let decoded = DecodedFlag()
    /// What ``describe(_:)`` and ``writesInto(_:key:)`` were told.
    let details = Details()

    final class DecodedFlag: Sendable {
        private let flag = Mutex(false)
        var value: Bool {
            get { flag.withLock { $0 } }
            set { flag.withLock { $0 = newValue } }
        }
    }

    final class Details: Sendable {
        private let stored = Mutex<(lines: [String], folder: (path: String, location: ConfigError)?, target: DestinationTarget?)>(([], nil, nil))
        var lines: [String] { stored.withLock { $0.lines } }
        func append(_ line: String) { stored.withLock { $0.lines.append(line) } }
        var folder: (path: String, location: ConfigError)? { stored.withLock { $0.folder } }
        func setFolder(_ path: String, _ location: ConfigError) { stored.withLock { $0.folder = (path, location) } }
        var target: DestinationTarget? { stored.withLock { $0.target } }
        func setTarget(_ target: DestinationTarget) { stored.withLock { $0.target = target } }
    }

    /// Whether the plugin should read and check the files its settings name (a key file) now: `syncgate validate`
    /// asks for it, so that a truncated key or a corrupt PEM is a located config error there. Elsewhere such a
    /// problem shows when the destination is used (it is then blocked) and the other destinations go on.
    public let checksFiles: Bool

    /// Whether the command only reads the ledger (`status`, `forget`) and builds no destination: a plugin then
    /// need not find credentials, and their absence is no error.
    public let readsLedgerOnly: Bool

    /// The delivery settings that will wrap the destination (its `concurrency`, `attempt_timeout`, ...), for a
    /// plugin that sizes itself by them (an external plugin is told them in its `hello`).
    public let delivery: DeliverySettings

    init(name: String, type: String, baseDirectory: URL, environment: [String: String], logger: Logger, node: Node, path: [ConfigKey],
         decoder: ConfigDecoder, checksFiles: Bool = false, readsLedgerOnly: Bool = false, delivery: DeliverySettings = .builtIn,
         stateDirectory: String? = nil) {
        self.checksFiles = checksFiles
        self.readsLedgerOnly = readsLedgerOnly
        self.stateDirectory = stateDirectory ?? baseDirectory.path
        self.delivery = delivery
        self.name = name
        self.type = type
        self.baseDirectory = baseDirectory
        self.environment = environment
        self.logger = logger
        self.node = node
        self.path = path
        self.decoder = decoder
    }

    /// Decodes the plugin's keys from the destination's mapping. Errors are located (file:line:column: key path).
    /// Throw ``ConfigValueError`` from the type's `init(from:)` to reject a value.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let value = try decoder.decode(type, from: node, at: path, preRead: GatewayConfig.coreDestinationKeys)
        decoded.value = true
        return value
    }

    /// A located config error about one of the plugin's keys (`key` may be dotted: `multipart.part_size`). A key
    /// that is not there (a missing setting) is located at the nearest mapping that is.
    public func invalid(_ key: String, _ message: String) -> ConfigError {
        let steps = key.split(separator: ".").map { ConfigKey.key(String($0)) }
        var at: Node? = nil
        for length in stride(from: steps.count, through: 0, by: -1) where at == nil { at = node.descend(Array(steps.prefix(length))) }
        return decoder.error(at: at ?? node, keyPath: ConfigKey.text(path + steps), message)
    }

    /// Warns (once, at load) when a file holding secrets can be read by other users of this machine.
    public func warnIfReadableByOthers(_ path: String, what: String = "key file") {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
              let permissions = attributes[.posixPermissions] as? Int else { return }
        if permissions & 0o044 != 0 {
            logger.warning("\(name): the \(what) \(path) can be read by other users (mode \(String(permissions, radix: 8))); run: chmod 600 \(path)")
        }
    }

    /// A line `syncgate validate` prints under the destination, such as where its credentials come from
    /// (`credentials: ...`). It must name sources (a file, a variable, an endpoint), never a secret.
    public func describe(_ line: String) {
        details.append(line)
    }

    /// Tells the core that the destination writes into a folder on this machine (`path`: absolute), set by `key`:
    /// a source routed to it that holds the folder does not walk it (its copies are not sent again, one folder
    /// deeper, at each sync), and the folder may be neither a source routed to it nor hold one (its copies could
    /// be written over the files they copy), a located config error at `key` (``OwnPaths``).
    public func writesInto(_ path: String, key: String = "path") {
        let location = invalid(key, "")
        details.setFolder(path, location)
    }

    /// Tells the core where the destination's copies go: a folder, a bucket and prefix at an endpoint, a spreadsheet
    /// and sheet (`description`, for people: never a secret; `identity`, what is compared, kept only as a digest:
    /// the description when nil). When a run finds it changed since the ledger recorded it, the files recorded synced
    /// at the destination are made pending again, as a destination pointed elsewhere holds none of them
    /// (``SyncEngine``). A plugin whose destination is listed at every run (a head unit), or that cannot tell where
    /// its copies go (an external plugin), says nothing.
    public func deliversTo(_ description: String, identity: String? = nil) {
        details.setTarget(DestinationTarget(description: description, identity: identity))
    }

    /// Tells the core that the destination reads a secret from this file (absolute): a source that holds it never
    /// sends it (``OwnPaths``). `KEY_file` secrets (``SecretFile``) are noted without asking.
    public func readsSecretFile(_ path: String) {
        decoder.noteSecretFile(path)
    }

    /// Resolves a path from the config against the config file's folder (absolute paths stay as they are;
    /// `~/` is the home folder).
    public func resolvePath(_ path: String) -> String {
        GatewayConfig.resolve(path, against: baseDirectory)
    }
}
