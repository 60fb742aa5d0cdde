/// A parsed JSON value that keeps object members in their written order and numbers as their literal text.
public indirect enum JSONValue: Sendable, Hashable {
    case string(String)
    case number(String)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([Member])

    public struct Member: Sendable, Hashable {
        public var name: String
        public var value: JSONValue
    }

    /// The first member named `name` of an object.
    public subscript(name: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.name == name }?.value
    }

    /// Compact JSON text.
    public var jsonText: String {
        switch self {
        case .string(let s): JSONText.string(s)
        case .number(let n): n
        case .bool(let b): b ? "true" : "false"
        case .null: "null"
        case .array(let items): JSONText.array(items.map(\.jsonText))
        case .object(let members): JSONText.object(members.map { ($0.name, $0.value.jsonText) })
        }
    }

    /// The cell for this value: strings, numbers and booleans as they are, null as an empty cell, arrays and
    /// objects as their JSON text.
    public var cell: Cell {
        switch self {
        case .string(let s): .string(s)
        case .number(let n): .number(n)
        case .bool(let b): .bool(b)
        case .null: .string("")
        case .array, .object: .string(jsonText)
        }
    }
}
