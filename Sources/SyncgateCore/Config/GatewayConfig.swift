import Foundation
import Logging
import Yams

/// A loaded, validated `plugins.yaml`: sources, artwork globs, destinations (with their plugins built) and routes.
public struct GatewayConfig: Sendable {
    /// The config file's path as given.
    public var file: String
    /// Its folder: relative paths in the config resolve against it.
    public var baseDirectory: URL
    /// Where the state ledger is: an SQLite file (absolute path) or a PostgreSQL database.
    public var state: StateLocation
    /// The state file's absolute path (SQLite), or a PostgreSQL state's URL without its password (what messages
    /// show). Setting it makes the state that SQLite file.
    public var statePath: String {
        get { state.displayName }
        set { state = .sqlite(path: newValue) }
    }
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
    /// Where the ledger is without a `state:` key, relative to the config file.
    static let defaultStatePath = ".syncgate/state.sqlite"
    /// The state's folder for a config under `/etc` without `STATE_DIRECTORY` (what a package creates).
    public static let systemStateDirectory = "/var/lib/syncgate"

    /// Where the ledger is without a `state:` key: `.syncgate/state.sqlite` beside the config; for a config under
    /// `/etc`, which a hardened service cannot write (`ProtectSystem=strict`), `state.sqlite` in systemd's
    /// `$STATE_DIRECTORY` (its first folder, from `StateDirectory=`) or else in `/var/lib/syncgate`.
    static func defaultStateFile(baseDirectory: URL, environment: [String: String]) -> String {
        let base = baseDirectory.standardizedFileURL.path
        guard base == "/etc" || base.hasPrefix("/etc/") else { return resolve(defaultStatePath, against: baseDirectory) }
        let systemd = environment["STATE_DIRECTORY"]?.split(separator: ":").first.map(String.init)
        let folder = systemd.flatMap { $0.hasPrefix("/") ? $0 : nil } ?? systemStateDirectory
        return URL(fileURLWithPath: folder).appendingPathComponent("state.sqlite").standardizedFileURL.path
    }

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

    /// A file's priority at a destination (`priority` of routes, for `order: priority`): the highest of the routes
    /// that send it there; 0 when none says.
    public func priority(source: String, relativePath: String, destination: String) -> Int {
        var highest: Int? = nil
        for route in routes where route.to.contains(destination) && route.applies(source: source, relativePath: relativePath) {
            highest = max(highest ?? route.priority, route.priority)
        }
        return highest ?? 0
    }

    /// Whether a file is deleted from its source once every destination it is routed to holds it: only when every
    /// route that sends it somewhere says `after_sync: delete` (its own, or else its source's). `keep` wins.
    public func deletesAfterSync(source: String, relativePath: String) -> Bool {
        let sourceMode = sources.first { $0.name == source }?.afterSync ?? .keep
        var any = false
        for route in routes where route.applies(source: source, relativePath: relativePath) {
            if (route.afterSync ?? sourceMode) != .delete { return false }
            any = true
        }
        return any
    }

    /// The sources some of whose files may be deleted after delivery (see ``deletesAfterSync(source:relativePath:)``).
    public var sourcesDeletingAfterSync: [String] {
        sources.map(\.name).filter { name in
            routes.contains { route in
                (route.sources?.contains(name) ?? true) && (route.afterSync ?? sources.first { $0.name == name }?.afterSync ?? .keep) == .delete
            }
        }
    }

    /// Whether two files can end up under one name at a destination: unless its plugin keeps paths apart and one
    /// source feeds it.
    public func namesCanClash(at destination: DestinationConfig) -> Bool {
        !(destination.destination.remoteNamesAreDistinct && sources(routedTo: destination.name).count <= 1)
    }

    /// The names of the sources whose files some route may send to a destination.
    public func sources(routedTo destination: String) -> Set<String> {
        GatewayConfig.sources(routedTo: destination, routes: routes, sources: sources)
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
    /// ``DestinationSetup/checksFiles``). `readingLedgerOnly` (for `status`, `forget`) tells plugins no destination
    /// will be used, so that missing credentials are no error (``DestinationSetup/readsLedgerOnly``).
    public static func load(
        path: String, registry: PluginRegistry, environment: [String: String] = ProcessInfo.processInfo.environment,
        logger: Logger = Logger(label: "syncgate"), checkingFiles: Bool = false, readingLedgerOnly: Bool = false
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
            registry: registry, environment: environment, logger: logger, checkingFiles: checkingFiles,
            readingLedgerOnly: readingLedgerOnly
        )
    }

    /// Parses config text (`file` names it in errors).
    public static func parse(
        text: String, file: String, baseDirectory: URL, registry: PluginRegistry,
        environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger = Logger(label: "syncgate"),
        checkingFiles: Bool = false, readingLedgerOnly: Bool = false
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
        let decoder = ConfigDecoder(file: file, environment: environment, baseDirectory: baseDirectory)
        var load = ConfigLoad(decoder: decoder)
        guard case .mapping(let topMapping) = root else {
            throw decoder.error(at: root, keyPath: "", "expected a mapping, found \(root.kindName)")
        }
        decoder.markRead(topMapping, at: [], keys: topKeys)
        /// A top-level key's value; null counts as absent.
        func child(_ key: String) -> Node? {
            guard let node = root.descend([.key(key)]), !node.isNull else { return nil }
            return node
        }
        /// A top-level key's list of items, or nil (with the error noted) when it is missing or not a list.
        func list(_ key: String, required: Bool) -> [Node]? {
            guard let node = child(key) else {
                if required { load.note(decoder.error(at: root, keyPath: key, "missing required key '\(key)'")) }
                return nil
            }
            guard case .sequence(let items) = node else {
                load.note(decoder.error(at: node, keyPath: key, "expected a list, found \(node.kindName)"))
                return nil
            }
            return Array(items)
        }
        func optional<T: Decodable>(_ type: T.Type, _ key: String) throws -> T? {
            guard let node = child(key) else { return nil }
            return try load.attempt([.key(key)]) { try decoder.decode(type, from: node, at: [.key(key)]) }
        }

        if let node = root.descend([.key("version")]) {
            if let version = try load.attempt([.key("version")], { try decoder.decode(Int.self, from: node, at: [.key("version")]) }), version != 1 {
                load.note(decoder.error(at: node, keyPath: "version", "unsupported version \(version) (this syncgate reads version 1)"))
            }
        } else {
            load.note(decoder.error(at: root, keyPath: "version", "missing required key 'version'"))
        }
        let rawState = try optional(RawState.self, "state")
        let state = (rawState ?? RawState.sqliteDefault).location(baseDirectory: baseDirectory, environment: environment)
        /// Where plugins keep files of their own (cached tokens): the state file's folder, or for a PostgreSQL state
        /// the folder an SQLite state would have by default (``defaultStateFile(baseDirectory:environment:)``).
        let stateDirectory: String = switch state {
        case .sqlite(let path): URL(fileURLWithPath: path).deletingLastPathComponent().path
        case .postgres: URL(fileURLWithPath: defaultStateFile(baseDirectory: baseDirectory, environment: environment)).deletingLastPathComponent().path
        }
        let artwork = try optional(GlobSet.self, "artwork")
        let defaults = try optional(DeliveryOverrides.self, "defaults")?.applied(to: .builtIn) ?? .builtIn
        let gateway = try optional(RawGatewaySettings.self, "gateway")
        let http = try optional(RawHTTPSettings.self, "http")

        // Each source, destination and route on its own, so that one run reports the mistakes of all of them.
        var sources: [SourceConfig] = []
        var sourceNames = Set<String>()  // written ones, those in error included: a route naming one is not wrong
        let sourceNodes = list("sources", required: true)
        for (index, node) in (sourceNodes ?? []).enumerated() {
            let path: [ConfigKey] = [.key("sources"), .index(index)]
            if let name = node.descend([.key("name")])?.string { sourceNames.insert(name) }
            guard let raw = try load.attempt(path, { try decoder.decode(RawSource.self, from: node, at: path) }) else { continue }
            if sources.contains(where: { $0.name == raw.name }) {
                load.note(decoder.error(at: node.descend([.key("name")]), path: path + [.key("name")], "duplicate source name '\(raw.name)'"))
                continue
            }
            sources.append(SourceConfig(
                name: raw.name, path: resolve(raw.path, against: baseDirectory),
                include: raw.include ?? (try! GlobSet(patterns: ["**/*"])), exclude: raw.exclude ?? GlobSet([]),
                followSymlinks: raw.followSymlinks ?? false, optional: raw.optional ?? false,
                pathLocation: decoder.error(at: node.descend([.key("path")]), path: path + [.key("path")], ""),
                minAge: raw.minAge?.duration ?? .zero
            ))
            sources[sources.count - 1].afterSync = raw.afterSync ?? .keep
            sources[sources.count - 1].maxDeleteFraction = raw.maxDeleteFraction ?? .default
            sources[sources.count - 1].maxEntries = raw.maxEntries ?? .default
        }
        if sourceNodes?.isEmpty == true {
            load.note(decoder.error(at: child("sources") ?? root, keyPath: "sources", "at least one source is needed"))
        }

        var destinations: [DestinationConfig] = []
        var destinationNames: [String] = []  // written ones, those in error included, in order
        let destinationNodes = list("destinations", required: true)
        for (index, node) in (destinationNodes ?? []).enumerated() {
            let path: [ConfigKey] = [.key("destinations"), .index(index)]
            if let name = node.descend([.key("name")])?.string, !destinationNames.contains(name) { destinationNames.append(name) }
            guard let head = try load.attempt(path, { try decoder.decode(RawDestinationHead.self, from: node, at: path) }) else { continue }
            if destinations.contains(where: { $0.name == head.name }) {
                load.note(decoder.error(at: node.descend([.key("name")]), path: path + [.key("name")], "duplicate destination name '\(head.name)'"), stopping: path)
                continue
            }
            guard let registration = registry.registration(for: head.type) else {
                load.note(decoder.error(
                    at: node.descend([.key("type")]), path: path + [.key("type")],
                    "unknown destination type '\(head.type)' (known: \(registry.types.joined(separator: ", ")))"
                ), stopping: path)
                continue
            }
            var delivery = head.delivery.applied(to: defaults)
            if delivery.deleteRemote && !registration.deletes {
                if head.delivery.deleteRemote == true {
                    load.note(decoder.error(
                        at: node.descend([.key("delete_remote")]), path: path + [.key("delete_remote")],
                        "a \(head.type) destination cannot delete what it holds; remove delete_remote"))
                }
                delivery.deleteRemote = false  // `defaults: { delete_remote: true }` leaves it out
            }
            var pluginLogger = logger
            pluginLogger[metadataKey: "destination"] = "\(head.name)"
            let setup = DestinationSetup(
                name: head.name, type: head.type, baseDirectory: baseDirectory, environment: environment,
                logger: pluginLogger, node: node, path: path, decoder: decoder, checksFiles: checkingFiles,
                readsLedgerOnly: readingLedgerOnly,
                delivery: delivery,
                stateDirectory: stateDirectory
            )
            let build: @Sendable () -> any Destination
            do {
                build = try registration.decode(setup)
            } catch {
                if let fatal = decoder.fatal { throw fatal }
                if setup.decoded.value {
                    // A misspelt key (`secret_acces_key`) makes the plugin miss a value and say so in its own words
                    // once its keys are read: the unknown key, reported below, is the better message then.
                    if case .mapping(let mapping) = node { decoder.markRead(mapping, at: path, keys: coreDestinationKeys) }
                    if !decoder.unknownKeys(under: path).isEmpty { continue }
                } else {
                    load.stopped.append(ConfigKey.text(path))
                }
                switch error {
                case let error as ConfigValueError: load.note(decoder.locate(error, node: node, path: path))
                case let error as ConfigError: load.note(error)
                default: throw error
                }
                continue
            }
            // Keys of this destination that neither the core nor the plugin read are reported below.
            if case .mapping(let mapping) = node {
                decoder.markRead(mapping, at: path, keys: coreDestinationKeys)
            }
            var destination = DestinationConfig(
                name: head.name, type: head.type, settings: delivery, build: build,
                configDigest: DestinationConfig.digest(of: node, environment: environment)
            )
            destination.details = setup.details.lines
            destination.folder = setup.details.folder
            destination.target = setup.details.target
            destinations.append(destination)
        }
        if destinationNodes?.isEmpty == true {
            load.note(decoder.error(at: child("destinations") ?? root, keyPath: "destinations", "at least one destination is needed"))
        }

        var routes: [RouteConfig] = []
        let routeNodes = list("routes", required: false)
        for (index, node) in (routeNodes ?? []).enumerated() {
            let path: [ConfigKey] = [.key("routes"), .index(index)]
            guard let raw = try load.attempt(path, { try decoder.decode(RawRoute.self, from: node, at: path) }) else { continue }
            for (toIndex, name) in raw.to.enumerated() where !destinationNames.contains(name) {
                let at = path + [.key("to"), .index(toIndex)]
                load.note(decoder.error(at: root.descend(at), path: at, "no destination named '\(name)' (known: \(destinationNames.joined(separator: ", ")))"))
            }
            for (sourceIndex, name) in (raw.sources ?? []).enumerated() where !sourceNames.contains(name) {
                let at = path + [.key("sources"), .index(sourceIndex)]
                load.note(decoder.error(at: root.descend(at), path: at, "no source named '\(name)'"))
            }
            if raw.to.isEmpty {
                load.note(decoder.error(at: root.descend(path + [.key("to")]), path: path + [.key("to")], "a route needs at least one destination"))
            }
            routes.append(RouteConfig(match: raw.match ?? (try! GlobSet(patterns: ["**/*"])), sources: raw.sources, to: raw.to, afterSync: raw.afterSync,
                                      priority: raw.priority ?? 0))
        }
        if routeNodes == nil {
            // No routes: every file goes to every destination.
            routes = [RouteConfig(match: try! GlobSet(patterns: ["**/*"]), to: destinations.map(\.name))]
        }

        // What syncgate writes inside the sources: never walked (or, where a copy could overwrite its file, an error).
        for error in findOwnPaths(in: &sources, destinations: destinations, routes: routes, state: state, stateDirectory: stateDirectory,
                                      secretFiles: decoder.secretFiles,
                                      configFile: decoder.holdsWrittenSecret ? baseDirectory.appendingPathComponent((file as NSString).lastPathComponent).path : nil) {
            load.note(error)
        }

        // Keys nobody read, except in what an error stopped short of reading.
        for unknown in decoder.unknownKeys() where !load.stopped.contains(where: { unknown.keyPath.hasPrefix($0 + ".") }) {
            load.note(unknown)
        }
        if let errors = ConfigError.combined(load.errors) { throw errors }

        return GatewayConfig(
            file: file, baseDirectory: baseDirectory,
            state: state,
            sources: sources, artwork: artwork ?? (try! GlobSet(patterns: defaultArtwork)),
            defaults: defaults, destinations: destinations, routes: routes,
            gateway: gateway?.settings ?? .builtIn, http: http?.settings
        )
    }

    /// The top-level keys.
    static let topKeys: Set<String> = ["version", "state", "sources", "artwork", "defaults", "routes", "destinations", "gateway", "http"]
}
