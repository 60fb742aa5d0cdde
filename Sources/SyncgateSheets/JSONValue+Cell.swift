import SyncgateJSON

extension JSONValue {
    /// The cell for this value: strings, numbers and booleans as they are, null as an empty cell, arrays and
    /// objects as their JSON text.
    public var cell: Cell {
        switch self {
        case .string(let s): .string(s)
        case .number(let n): .number(n)
        case .bool(let b): .bool(b)
        case .null: .string("")
        case .array, .object: .string(text)
        }
    }
}
