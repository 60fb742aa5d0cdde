/// A JSON value, faithful to its text: object members stay in their written order (``JSONObject``) and numbers stay
/// as their literal text, read through exact accessors (``int64`` for an integer of any form, ``double``). Shared by
/// the plugin protocol (SyncgateExec), SDL RPC parameters (SyncgateSDL), the Sheets records (SyncgateSheets) and
/// the reports (SyncgateCore). ``JSONParser`` reads it, ``JSONText`` writes it.
public indirect enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number as its literal text (`-0`, `1.50`, `1e3` stay as written).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// A member of an object: its name and value.
    public struct Member: Sendable, Hashable {
        public var name: String
        public var value: JSONValue

        public init(name: String, value: JSONValue) {
            self.name = name
            self.value = value
        }
    }

    /// An integer number, exact.
    public static func int(_ value: Int64) -> JSONValue { .number(String(value)) }

    /// An integer number, exact.
    public static func int(_ value: Int) -> JSONValue { .number(String(value)) }

    /// A number from a Double: integral values below 9e15 as integers (`3`, not `3.0`), others in Swift's shortest
    /// round-trip form (`1.5`, `1e-05`); NaN and the infinities, which JSON cannot write, as null.
    public static func double(_ value: Double) -> JSONValue {
        guard value.isFinite else { return .null }
        if value.rounded() == value, abs(value) < 9.0e15 { return .number(String(Int64(value))) }
        return .number("\(value)")
    }

    /// An object of these members, keys sorted (a dictionary has no order of its own).
    public static func object(sorting dictionary: [String: JSONValue]) -> JSONValue { .object(JSONObject(dictionary)) }

    /// The first member named `key` of an object; nil for a missing member or another kind of value.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The number as a Double (the nearest one); nil for another kind of value or a number beyond Double's range.
    public var double: Double? {
        guard case .number(let text) = self, let value = Double(text), value.isFinite else { return nil }
        return value
    }

    /// The number as an Int64 when it is an integer: exact for integer literals (all of Int64's range), and for
    /// other forms (`1.0`, `1e3`) when their value is integral and below 9e15. Nil otherwise.
    public var int64: Int64? {
        guard case .number(let text) = self else { return nil }
        if let exact = Int64(text) { return exact }
        guard let value = Double(text), value.rounded() == value, abs(value) < 9.0e15 else { return nil }
        return Int64(value)
    }

    public var array: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var object: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    public var isNull: Bool { self == .null }

    /// Compact JSON text on one line, members in their order (no newline can occur in it: control characters and
    /// U+2028/U+2029 are escaped).
    public var text: String { JSONText.compact(self) }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An object, members in the written order.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { Member(name: $0.0, value: $0.1) }))
    }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: CustomStringConvertible {
    public var description: String { text }
}
