import Foundation
import Yams

/// Decodes `Decodable` values from a YAML node tree and reports every problem as a located ``ConfigError``
/// (file, line, column, key path). It expands `${ENV_VAR}` in scalars, tracks which keys each mapping was
/// asked for, so that keys nobody reads are reported as unknown, and bounds the work a hostile document
/// (alias bombs) can cause.
/// Unchecked: its bookkeeping (`fatal`, `visited`, `readKeys`) is unguarded, and only the one thread that loads a
/// config decodes with it; a loaded config keeps it only to locate errors (``error(at:keyPath:_:)``).
public final class ConfigDecoder: @unchecked Sendable {
    public let file: String
    let environment: [String: String]
    /// The config file's folder: relative paths of secret files (`KEY_file`) resolve against it.
    let baseDirectory: URL?
    /// The error that ends decoding (the document is too large); set once it is met.
    private(set) var fatal: ConfigError?
    private var visited = 0
    private let maxVisits: Int
    /// Mappings decoded through a keyed container: path text -> (mapping, keys read).
    private var readKeys: [String: (mapping: Node.Mapping, keys: Set<String>)] = [:]
    /// The path texts of `readKeys` by their first two keys (`destinations[3]`), so that the unknown keys of one
    /// destination are found without looking at every other one's.
    private var pathsByItem: [String: Set<String>] = [:]
    /// The secret files read so far (absolute paths): a source that holds one never sends it (``OwnPaths``).
    private(set) var secretFiles: [String] = []

    func noteSecretFile(_ path: String) {
        if !secretFiles.contains(path) { secretFiles.append(path) }
    }
    /// A secret was written in the config itself (not only `${VAR}`s): the config file is then never sent either.
    private(set) var holdsWrittenSecret = false

    func noteWrittenSecret() { holdsWrittenSecret = true }

    public init(file: String, environment: [String: String], baseDirectory: URL? = nil, maxVisits: Int = 200_000) {
        self.file = file
        self.environment = environment
        self.baseDirectory = baseDirectory
        self.maxVisits = maxVisits
    }

    /// Decodes `type` from `node`, located at `path`. Keys listed in `preRead` count as read.
    public func decode<T: Decodable>(_ type: T.Type, from node: Node, at path: [ConfigKey], preRead: Set<String> = []) throws -> T {
        if !preRead.isEmpty, case .mapping(let mapping) = node {
            markRead(mapping, at: path, keys: preRead)
        }
        let decoder = NodeDecoder(node: node, path: path, owner: self)
        do {
            return try T(from: decoder)
        } catch let error as ConfigError {
            throw error
        } catch let error as ConfigValueError {
            throw locate(error, node: node, path: path)
        } catch let error as DecodingError {
            throw translate(error, root: node, rootPath: path)
        }
    }

    /// Unknown keys: keys of mappings decoded under `path` that no decoder asked for.
    public func unknownKeys(under prefix: [ConfigKey] = []) -> [ConfigError] {
        let prefixText = ConfigKey.text(prefix)
        var errors: [ConfigError] = []
        let candidates: [(String, (mapping: Node.Mapping, keys: Set<String>))]
        if prefix.count >= 2 {
            candidates = (pathsByItem[ConfigKey.text(Array(prefix.prefix(2)))] ?? []).compactMap { text in readKeys[text].map { (text, $0) } }
        } else {
            candidates = readKeys.map { ($0.key, $0.value) }
        }
        for (pathText, entry) in candidates where prefixText.isEmpty || pathText == prefixText || pathText.hasPrefix(prefixText + ".") || pathText.hasPrefix(prefixText + "[") {
            for (key, _) in entry.mapping {
                guard let name = key.string, !entry.keys.contains(name) else { continue }
                let keyPath = pathText.isEmpty ? name : "\(pathText).\(name)"
                let near = NearestName.suggestion(for: name, among: entry.keys).map { "; did you mean '\($0)'?" } ?? ""
                errors.append(error(at: key, keyPath: keyPath, "unknown key '\(name)'\(near)"))
            }
        }
        return errors.sorted { ($0.line ?? 0, $0.column ?? 0) < ($1.line ?? 0, $1.column ?? 0) }
    }

    // MARK: - Building errors

    public func error(at node: Node?, keyPath: String, _ message: String) -> ConfigError {
        let mark = node?.mark
        return ConfigError(file: file, line: mark?.line, column: mark?.column, keyPath: keyPath, message: message)
    }

    func error(at node: Node?, path: [ConfigKey], _ message: String) -> ConfigError {
        error(at: node, keyPath: ConfigKey.text(path), message)
    }

    func locate(_ error: ConfigValueError, node: Node, path: [ConfigKey]) -> ConfigError {
        if let key = error.key, case .mapping(let mapping) = node {
            let child = mapping.first { $0.key.string == key }
            return self.error(at: child?.value ?? node, path: path + [.key(key)], error.message)
        }
        return self.error(at: node, path: path, error.message)
    }

    private func translate(_ error: DecodingError, root: Node, rootPath: [ConfigKey]) -> ConfigError {
        // Our own containers throw ConfigError; a DecodingError comes from a type's own init(from:).
        let (context, message): (DecodingError.Context, String) = {
            switch error {
            case .typeMismatch(_, let c): return (c, c.debugDescription)
            case .valueNotFound(_, let c): return (c, c.debugDescription)
            case .keyNotFound(let key, let c): return (c, "missing required key '\(key.stringValue)'")
            case .dataCorrupted(let c): return (c, c.debugDescription)
            @unknown default: return (DecodingError.Context(codingPath: [], debugDescription: ""), "\(error)")
            }
        }()
        let path = context.codingPath.map(ConfigKey.init)
        return self.error(at: root.descend(path.dropFirst(rootPath.count)) ?? root, path: path, message)
    }

    // MARK: - Bookkeeping used by the containers

    func visit(_ node: Node, path: [ConfigKey]) throws {
        if let fatal { throw fatal }
        visited += 1
        if visited > maxVisits {
            let tooLarge = error(at: node, path: path, "the document is too large or expands too many aliases (over \(maxVisits) values)")
            fatal = tooLarge
            throw tooLarge
        }
    }

    func markRead(_ mapping: Node.Mapping, at path: [ConfigKey], keys: Set<String>) {
        let text = ConfigKey.text(path)
        if var entry = readKeys[text] {
            entry.keys.formUnion(keys)
            readKeys[text] = entry
        } else {
            readKeys[text] = (mapping, keys)
            if path.count >= 2 { pathsByItem[ConfigKey.text(Array(path.prefix(2))), default: []].insert(text) }
        }
    }

    /// Expands `${NAME}`, `${NAME:-default}`, `${NAME:?message}` and `$$` (``VariableExpansion``).
    func expand(_ text: String, node: Node, path: [ConfigKey]) throws -> String {
        guard text.contains("$") else { return text }
        do {
            return try VariableExpansion.expand(text, environment: environment)
        } catch {
            throw self.error(at: node, path: path, error.message)
        }
    }
}

/// One step of a config key path: a mapping key or a sequence index.
public enum ConfigKey: Sendable, Hashable, CustomStringConvertible {
    case key(String)
    case index(Int)

    init(_ codingKey: any CodingKey) {
        if let index = codingKey.intValue, codingKey.stringValue.hasPrefix("Index ") || codingKey.stringValue == "\(index)" {
            self = .index(index)
        } else {
            self = .key(codingKey.stringValue)
        }
    }

    public var description: String {
        switch self {
        case .key(let k): k
        case .index(let i): "[\(i)]"
        }
    }

    /// `destinations[1].retry.file`
    public static func text(_ path: some Collection<ConfigKey>) -> String {
        var out = ""
        for step in path {
            switch step {
            case .key(let k): out += out.isEmpty ? k : ".\(k)"
            case .index(let i): out += "[\(i)]"
            }
        }
        return out
    }
}

struct IndexKey: CodingKey {
    var stringValue: String { "\(index)" }
    var intValue: Int? { index }
    let index: Int
    init(_ index: Int) { self.index = index }
    init?(stringValue: String) { nil }
    init?(intValue: Int) { self.index = intValue }
}

struct NameKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { self.stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Node {
    /// Follows a key path down from this node.
    func descend(_ path: some Collection<ConfigKey>) -> Node? {
        var node: Node? = self
        for step in path {
            switch (step, node) {
            case (.key(let k), .mapping(let m)?): node = m.first { $0.key.string == k }?.value
            case (.index(let i), .sequence(let s)?): node = i < s.count ? s[i] : nil
            default: return nil
            }
        }
        return node
    }

    var isNull: Bool {
        guard case .scalar(let scalar) = self else { return false }
        if scalar.style != .plain && scalar.style != .any { return false }
        return ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    var kindName: String {
        switch self {
        case .scalar: isNull ? "null" : "a scalar"
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .alias: "an alias"
        }
    }
}
