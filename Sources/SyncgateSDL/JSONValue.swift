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

    /// Parses a JSON object (RPC parameters). An empty payload is an empty object.
    public static func parseObject(_ bytes: [UInt8]) throws -> [String: JSONValue] {
        if bytes.isEmpty { return [:] }
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
}
