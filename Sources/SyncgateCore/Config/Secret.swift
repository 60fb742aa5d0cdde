import Foundation

/// A configured secret (a key, a password, a token). Prints as `<redacted>`; its value is registered with
/// ``Redactor`` so that it is scrubbed from every log line, error message, event and ledger row.
public struct Secret: Sendable, Hashable, Decodable, CustomStringConvertible, CustomDebugStringConvertible {
    private let value: String

    public init(_ value: String) {
        self.value = value
        Redactor.shared.register(value)
    }

    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
        if let node = decoder as? NodeDecoder, case .scalar(let scalar) = node.node, Secret.isWritten(scalar.string) {
            node.owner.noteWrittenSecret()
        }
    }

    /// Whether a config value holds some of its secret as written, besides `${VAR}`s.
    static func isWritten(_ text: String) -> Bool {
        var rest = Substring(text)
        while let start = rest.range(of: "${") {
            if !rest[..<start.lowerBound].isEmpty { return true }
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else { return true }
            rest = rest[rest.index(after: end)...]
        }
        return !rest.isEmpty
    }

    /// The secret itself, for the wire only.
    public func reveal() -> String { value }

    public var isEmpty: Bool { value.isEmpty }
    public var description: String { "<redacted>" }
    public var debugDescription: String { "<redacted>" }
}

/// A secret read from a file (`KEY_file: /run/secrets/key`, as Docker and Kubernetes mount secrets): the file's
/// text, one trailing line break removed. A relative path resolves against the config file's folder. A file that
/// cannot be read, is not a regular file, is empty or larger than 64 KiB is a config error naming the file, never
/// its content.
public struct SecretFile: Sendable, Decodable {
    public var path: String
    public var secret: Secret

    public static let maxSize = 64 << 10

    public init(from decoder: any Decoder) throws {
        let written = try decoder.singleValueContainer().decode(String.self)
        guard !written.isEmpty else { throw ConfigValueError("must be the path of a file holding the secret") }
        let base = (decoder as? NodeDecoder)?.owner.baseDirectory ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        path = GatewayConfig.resolve(written, against: base)
        (decoder as? NodeDecoder)?.owner.noteSecretFile(path)
        let data: Data
        do {
            data = try ConfigFile.read(path, displayName: path, limit: SecretFile.maxSize + 1)
        } catch let error as ConfigError {
            let why = switch error.message {
            case let m where m.hasPrefix("no such file"): "does not exist"
            case let m where m.hasPrefix("is a folder"): "is a folder"
            case let m where m.hasPrefix("is not a regular file"): "is not a regular file"
            case let m: m
            }
            throw ConfigValueError("the secret file \(path) \(why)")
        }
        guard data.count <= SecretFile.maxSize else {
            throw ConfigValueError("the secret file \(path) is larger than \(SecretFile.maxSize / 1024) KiB; not a secret?")
        }
        guard var text = String(data: data, encoding: .utf8) else {
            throw ConfigValueError("the secret file \(path) is not UTF-8 text")
        }
        // "\r\n" is one Character.
        if text.hasSuffix("\n") || text.hasSuffix("\r\n") { text.removeLast() }
        guard !text.isEmpty else { throw ConfigValueError("the secret file \(path) is empty") }
        secret = Secret(text)
    }
}

extension KeyedDecodingContainer {
    /// A secret given either in the config (`key`, `${VAR}` allowed) or in a file (`fileKey`, ``SecretFile``);
    /// both is an error, neither is nil.
    public func decodeSecretIfPresent(_ key: Key, orFile fileKey: Key) throws -> Secret? {
        let direct = try decodeIfPresent(Secret.self, forKey: key)
        let file = try decodeIfPresent(SecretFile.self, forKey: fileKey)
        if direct != nil, file != nil {
            throw ConfigValueError("set \(key.stringValue) or \(fileKey.stringValue), not both", key: fileKey)
        }
        return direct ?? file?.secret
    }
}
