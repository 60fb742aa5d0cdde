import Foundation
import Logging
import Yams

/// A loaded, validated `plugins.yaml`: sources, artwork globs, destinations (with their plugins built) and routes.
public struct GatewayConfig: Sendable {
    /// The config file's path as given.
    public var file: String
    /// Its folder: relative paths in the config resolve against it.
    public var baseDirectory: URL
    /// Absolute path of the state ledger (SQLite).
    public var statePath: String
    public var sources: [SourceConfig]
    public var artwork: GlobSet
    public var defaults: DeliverySettings
    public var destinations: [DestinationConfig]
    public var routes: [RouteConfig]
    /// How `syncgate run` watches its sources (`gateway:`).
    public var gateway: GatewaySettings = .builtIn
    /// The status page and API of `syncgate run` (`http:`; nil: off).
    public var http: HTTPSettings?

    /// Keys of a destination mapping that belong to the core, not to the plugin.
    public static let coreDestinationKeys: Set<String> = DeliveryOverrides.keys.union(["name", "type"])

    public static let defaultArtwork = ["**/*.png", "**/*.jpg", "**/*.jpeg", "**/*.bmp"]

    /// Largest config file read (a larger one is an error, not a slow start).
    public static let maxFileSize = 1 << 20

    public func destination(named name: String) -> DestinationConfig? {
        destinations.first { $0.name == name }
    }

    public func isArtwork(_ relativePath: String) -> Bool { artwork.matches(relativePath) }

    /// The destinations a file is routed to, in config order.
    public func destinations(forSource source: String, relativePath: String) -> [String] {
        var names = Set<String>()
        for route in routes where route.applies(source: source, relativePath: relativePath) { names.formUnion(route.to) }
        if names.count == destinations.count { return destinations.map(\.name) }
        return destinations.compactMap { names.contains($0.name) ? $0.name : nil }
    }

    /// The names of the sources whose files some route may send to a destination.
    public func sources(routedTo destination: String) -> Set<String> {
        var names = Set<String>()
        for route in routes where route.to.contains(destination) {
            names.formUnion(route.sources ?? sources.map(\.name))
        }
        return names
    }

    static func resolve(_ path: String, against base: URL) -> String {
        if path.hasPrefix("/") { return URL(fileURLWithPath: path).standardizedFileURL.path }
        if path == "~" || path.hasPrefix("~/") {
            let home = FileManager.default.homeDirectoryForCurrentUser.path
            return URL(fileURLWithPath: home + path.dropFirst()).standardizedFileURL.path
        }
        return base.appendingPathComponent(path).standardizedFileURL.path
    }
}

extension GatewayConfig {
    /// Reads, parses and validates a config file, building every destination through `registry`.
    /// Every problem is a ``ConfigError`` naming the file, line, column and key. `checkingFiles` (for `validate`)
    /// also has plugins read and check the files their settings name, such as a key file (see
    /// ``DestinationSetup/checksFiles``).
    public static func load(
        path: String, registry: PluginRegistry, environment: [String: String] = ProcessInfo.processInfo.environment,
        logger: Logger = Logger(label: "syncgate"), checkingFiles: Bool = false
    ) throws -> GatewayConfig {
        let displayName = path
        let url = URL(fileURLWithPath: path)
        let data = try ConfigFile.read(path, displayName: displayName, limit: maxFileSize + 1)
        guard data.count <= maxFileSize else {
            throw ConfigError(file: displayName, line: nil, column: nil, keyPath: "", message: "larger than \(maxFileSize / 1024) KiB; not a config file?")
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            let (line, column) = firstInvalidUTF8(data)
            throw ConfigError(file: displayName, line: line, column: column, keyPath: "", message: "not valid UTF-8 text")
        }
        return try parse(
            text: text, file: displayName, baseDirectory: url.deletingLastPathComponent().standardizedFileURL,
            registry: registry, environment: environment, logger: logger, checkingFiles: checkingFiles
        )
    }

    /// Parses config text (`file` names it in errors).
    public static func parse(
        text: String, file: String, baseDirectory: URL, registry: PluginRegistry,
        environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger = Logger(label: "syncgate"),
        checkingFiles: Bool = false
    ) throws -> GatewayConfig {
        let root: Node
        do {
            guard let node = try Yams.compose(yaml: text) else {
                throw ConfigError(file: file, line: 1, column: 1, keyPath: "", message: "the file is empty")
            }
            root = node
        } catch let error as YamlError {
            throw yamlError(error, file: file)
        }
        let decoder = ConfigDecoder(file: file, environment: environment)
        let top = try decoder.decode(RawTop.self, from: root, at: [])

        guard top.version == 1 else {
            throw decoder.error(at: root.descend([.key("version")]), keyPath: "version", "unsupported version \(top.version) (this syncgate reads version 1)")
        }
        let defaults = top.defaults?.applied(to: .builtIn) ?? .builtIn

        var sources: [SourceConfig] = []
        for (index, raw) in top.sources.enumerated() {
            let path: [ConfigKey] = [.key("sources"), .index(index)]
            if sources.contains(where: { $0.name == raw.name }) {
                throw decoder.error(at: root.descend(path + [.key("name")]), path: path + [.key("name")], "duplicate source name '\(raw.name)'")
            }
            sources.append(SourceConfig(
                name: raw.name, path: resolve(raw.path, against: baseDirectory),
                include: raw.include ?? (try! GlobSet(patterns: ["**/*"])), exclude: raw.exclude ?? GlobSet([]),
                followSymlinks: raw.followSymlinks ?? false, optional: raw.optional ?? false,
                pathLocation: decoder.error(at: root.descend(path + [.key("path")]), path: path + [.key("path")], "")
            ))
        }
        if sources.isEmpty {
            throw decoder.error(at: root.descend([.key("sources")]) ?? root, keyPath: "sources", "at least one source is needed")
        }

        var destinations: [DestinationConfig] = []
        var destinationNames = Set<String>()
        guard case .sequence(let destinationNodes)? = root.descend([.key("destinations")]) else {
            throw decoder.error(at: root, keyPath: "destinations", "missing required key 'destinations'")
        }
        for (index, node) in destinationNodes.enumerated() {
            let path: [ConfigKey] = [.key("destinations"), .index(index)]
            let head = try decoder.decode(RawDestinationHead.self, from: node, at: path)
            if !destinationNames.insert(head.name).inserted {
                throw decoder.error(at: node.descend([.key("name")]), path: path + [.key("name")], "duplicate destination name '\(head.name)'")
            }
            guard let registration = registry.registration(for: head.type) else {
                throw decoder.error(
                    at: node.descend([.key("type")]), path: path + [.key("type")],
                    "unknown destination type '\(head.type)' (known: \(registry.types.joined(separator: ", ")))"
                )
            }
            var pluginLogger = logger
            pluginLogger[metadataKey: "destination"] = "\(head.name)"
            let setup = DestinationSetup(
                name: head.name, type: head.type, baseDirectory: baseDirectory, environment: environment,
                logger: pluginLogger, node: node, path: path, decoder: decoder, checksFiles: checkingFiles,
                delivery: head.delivery.applied(to: defaults)
            )
            let build: @Sendable () -> any Destination
            do {
                build = try registration.decode(setup)
            } catch {
                // A misspelt key (`secret_acces_key`) makes the plugin miss a value and say so in its own words
                // once its keys are read: the unknown key is the better message then.
                if setup.decoded.value {
                    if case .mapping(let mapping) = node { decoder.markRead(mapping, at: path, keys: coreDestinationKeys) }
                    if let unknown = decoder.unknownKeys(under: path).first { throw unknown }
                }
                if let error = error as? ConfigValueError { throw decoder.locate(error, node: node, path: path) }
                throw error
            }
            // Keys of this destination that neither the core nor the plugin read.
            if case .mapping(let mapping) = node {
                decoder.markRead(mapping, at: path, keys: coreDestinationKeys)
            }
            if let unknown = decoder.unknownKeys(under: path).first { throw unknown }
            destinations.append(DestinationConfig(
                name: head.name, type: head.type, settings: head.delivery.applied(to: defaults), build: build,
                configDigest: DestinationConfig.digest(of: node, environment: environment)
            ))
        }
        if destinations.isEmpty {
            throw decoder.error(at: root.descend([.key("destinations")]) ?? root, keyPath: "destinations", "at least one destination is needed")
        }

        var routes: [RouteConfig] = []
        for (index, raw) in (top.routes ?? []).enumerated() {
            let path: [ConfigKey] = [.key("routes"), .index(index)]
            for (toIndex, name) in raw.to.enumerated() where !destinationNames.contains(name) {
                let at = path + [.key("to"), .index(toIndex)]
                throw decoder.error(at: root.descend(at), path: at, "no destination named '\(name)' (known: \(destinations.map(\.name).joined(separator: ", ")))")
            }
            for (sourceIndex, name) in (raw.sources ?? []).enumerated() where !sources.contains(where: { $0.name == name }) {
                let at = path + [.key("sources"), .index(sourceIndex)]
                throw decoder.error(at: root.descend(at), path: at, "no source named '\(name)'")
            }
            if raw.to.isEmpty {
                throw decoder.error(at: root.descend(path + [.key("to")]), path: path + [.key("to")], "a route needs at least one destination")
            }
            routes.append(RouteConfig(match: raw.match ?? (try! GlobSet(patterns: ["**/*"])), sources: raw.sources, to: raw.to))
        }
        if top.routes == nil {
            // No routes: every file goes to every destination.
            routes = [RouteConfig(match: try! GlobSet(patterns: ["**/*"]), to: destinations.map(\.name))]
        }

        if let unknown = decoder.unknownKeys().first { throw unknown }

        return GatewayConfig(
            file: file, baseDirectory: baseDirectory,
            statePath: resolve(top.state ?? ".syncgate/state.sqlite", against: baseDirectory),
            sources: sources, artwork: top.artwork ?? (try! GlobSet(patterns: defaultArtwork)),
            defaults: defaults, destinations: destinations, routes: routes,
            gateway: top.gateway?.settings ?? .builtIn, http: top.http?.settings
        )
    }

    private static func yamlError(_ error: YamlError, file: String) -> ConfigError {
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            let detail = context.map { "\($0.text); " } ?? ""
            return ConfigError(file: file, line: mark.line, column: mark.column, keyPath: "", message: "YAML syntax: \(detail)\(problem)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            return ConfigError(
                file: file, line: context.mark.line, column: context.mark.column, keyPath: "",
                message: "duplicate key \(duplicates.map { "'\($0)'" }.joined(separator: ", ")) in a mapping"
            )
        case .reader(let problem, _, _, _):
            return ConfigError(file: file, line: nil, column: nil, keyPath: "", message: "YAML: \(problem)")
        default:
            return ConfigError(file: file, line: nil, column: nil, keyPath: "", message: "YAML: \(error)")
        }
    }

    private static func firstInvalidUTF8(_ data: Data) -> (Int, Int) {
        var line = 1
        var lineStart = 0
        var index = 0
        let bytes = [UInt8](data)
        while index < bytes.count {
            let valid = String(validating: bytes[index..<min(bytes.count, index + 4)].prefix(utf8Length(bytes[index])), as: UTF8.self) != nil
            if !valid { return (line, index - lineStart + 1) }
            if bytes[index] == 0x0A {
                line += 1
                lineStart = index + 1
            }
            index += max(1, utf8Length(bytes[index]))
        }
        return (line, 1)
    }

    private static func utf8Length(_ lead: UInt8) -> Int {
        switch lead {
        case 0..<0x80: 1
        case 0xC0..<0xE0: 2
        case 0xE0..<0xF0: 3
        case 0xF0..<0xF8: 4
        default: 1
        }
    }
}

struct RawTop: Decodable {
    var version: Int
    var state: String?
    var sources: [RawSource]
    var artwork: GlobSet?
    var defaults: DeliveryOverrides?
    var routes: [RawRoute]?
    var gateway: RawGatewaySettings?
    var http: RawHTTPSettings?

    enum CodingKeys: String, CodingKey { case version, state, sources, artwork, defaults, routes, destinations, gateway, http }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        version = try c.decode(Int.self, forKey: .version)
        state = try c.decodeIfPresent(String.self, forKey: .state)
        sources = try c.decode([RawSource].self, forKey: .sources)
        artwork = try c.decodeIfPresent(GlobSet.self, forKey: .artwork)
        defaults = try c.decodeIfPresent(DeliveryOverrides.self, forKey: .defaults)
        routes = try c.decodeIfPresent([RawRoute].self, forKey: .routes)
        gateway = try c.decodeIfPresent(RawGatewaySettings.self, forKey: .gateway)
        http = try c.decodeIfPresent(RawHTTPSettings.self, forKey: .http)
        // destinations are decoded one by one with their plugins; mark the key as known here.
        _ = c.contains(.destinations)
    }
}
