/// Codable, for callers that hand a value to Foundation's encoders (the head-unit simulator's pretty-printed RPC
/// parameters). Decoding cannot see a number's text nor an object's order: numbers come back as integers when they
/// are integers, else in Double's form, and object keys sorted. ``JSONParser`` keeps both.
extension JSONValue: Codable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        if let keyed = try? decoder.container(keyedBy: Key.self) {
            var object = JSONObject()
            for key in keyed.allKeys.sorted(by: { $0.stringValue < $1.stringValue }) {
                object.members.append(Member(name: key.stringValue, value: try keyed.decode(JSONValue.self, forKey: key)))
            }
            self = .object(object)
            return
        }
        if var unkeyed = try? decoder.unkeyedContainer() {
            var items: [JSONValue] = []
            while !unkeyed.isAtEnd { items.append(try unkeyed.decode(JSONValue.self)) }
            self = .array(items)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let value = try? single.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? single.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? single.decode(Double.self) {
            self = .double(value)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .object(let object):
            var keyed = encoder.container(keyedBy: Key.self)
            for member in object.members { try keyed.encode(member.value, forKey: Key(stringValue: member.name)) }
        case .array(let items):
            var unkeyed = encoder.unkeyedContainer()
            for item in items { try unkeyed.encode(item) }
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .string(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .number(let text):
            var single = encoder.singleValueContainer()
            if let exact = Int64(text) {
                try single.encode(exact)
            } else if let exact = UInt64(text) {
                try single.encode(exact)
            } else {
                try single.encode(Double(text) ?? 0)
            }
        }
    }
}
