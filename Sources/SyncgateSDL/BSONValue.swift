/// A BSON value of the kinds SDL control payloads use.
public indirect enum BSONValue: Sendable, Hashable {
    case double(Double)
    case string(String)
    case document(BSONDocument)
    case array([BSONValue])
    case bool(Bool)
    case null
    case int32(Int32)
    case int64(Int64)

    var typeByte: UInt8 {
        switch self {
        case .double: 0x01
        case .string: 0x02
        case .document: 0x03
        case .array: 0x04
        case .bool: 0x08
        case .null: 0x0A
        case .int32: 0x10
        case .int64: 0x12
        }
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// Any integer kind, widened.
    public var intValue: Int64? {
        switch self {
        case .int32(let v): Int64(v)
        case .int64(let v): v
        case .double(let d) where d == d.rounded() && abs(d) < 9e15: Int64(d)
        default: nil
        }
    }

    public var boolValue: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var arrayValue: [BSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }
}
