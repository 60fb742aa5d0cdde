import Foundation

/// A JSON value as RPC parameters carry it. Integers stay exact (Int64); Core's pretty-printed JSON is parsed,
/// never compared as bytes.
public indirect enum JSONValue: Sendable, Hashable, Codable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? container.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? container.decode(Double.self) {
            self = .double(d)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let a = try? container.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let b): try container.encode(b)
        case .int(let i): try container.encode(i)
        case .double(let d): try container.encode(d)
        case .string(let s): try container.encode(s)
        case .array(let a): try container.encode(a)
        case .object(let o): try container.encode(o)
        }
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var intValue: Int64? {
        switch self {
        case .int(let i): i
        case .double(let d) where d == d.rounded() && abs(d) < 9e15: Int64(d)
        default: nil
        }
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }

    public var description: String {
        (try? String(decoding: JSONValue.encode(object: self), as: UTF8.self)) ?? "?"
    }

    /// Compact JSON bytes (sorted keys, `/` not escaped).
    public static func encode(object: JSONValue) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(object))
    }

    /// Most values one RPC's parameters may hold. A ListFiles answer naming 1,000 files holds about 1,010; the
    /// limit keeps a peer's JSON from costing memory out of proportion to its size (a 4 MiB array of `0`s would
    /// be two million values).
    public static let maxValues = 100_000

    /// Parses a JSON object (RPC parameters). An empty payload is an empty object. Throws, before parsing, for a
    /// document of more than `maxValues` values.
    public static func parseObject(_ bytes: [UInt8], maxValues: Int = JSONValue.maxValues) throws -> [String: JSONValue] {
        if bytes.isEmpty { return [:] }
        let values = countValues(bytes, stoppingAfter: maxValues)
        guard values <= maxValues else {
            throw SDLError.malformedJSON("more than \(maxValues) values in \(bytes.count) bytes")
        }
        do {
            let value = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
            guard case .object(let object) = value else { throw SDLError.malformedJSON("parameters are not an object") }
            return object
        } catch let error as SDLError {
            throw error
        } catch {
            throw SDLError.malformedJSON("\(error)")
        }
    }

    /// An upper bound of the number of values in a JSON text, in one pass: every value but the outermost either
    /// follows a `,` or is the first in its container (after its `[` or `{`), so the `,`, `[` and `{` outside
    /// strings, plus one, bound it. Stops counting past `limit`.
    static func countValues(_ bytes: [UInt8], stoppingAfter limit: Int) -> Int {
        var count = 1
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: ","), UInt8(ascii: "["), UInt8(ascii: "{"):
                count += 1
                if count > limit { return count }
            default: break
            }
        }
        return count
    }
}
