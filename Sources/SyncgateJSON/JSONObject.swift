/// A JSON object's members in their written order, read by name like a dictionary. A name written twice keeps
/// both members (the text is kept as written); reading by name finds the first.
public struct JSONObject: Sendable, Hashable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    public var members: [JSONValue.Member]

    public init(_ members: [JSONValue.Member] = []) { self.members = members }

    /// The members of a dictionary, keys sorted (Swift's `String` order).
    public init(_ dictionary: [String: JSONValue]) {
        members = dictionary.keys.sorted().map { JSONValue.Member(name: $0, value: dictionary[$0]!) }
    }

    /// Members in the written order.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        members = elements.map { JSONValue.Member(name: $0.0, value: $0.1) }
    }

    public var startIndex: Int { members.startIndex }
    public var endIndex: Int { members.endIndex }
    public subscript(position: Int) -> JSONValue.Member { members[position] }

    /// The first member named `key`. Setting replaces that member's value in place, appends a new member at the
    /// end, or (nil) removes every member of that name.
    public subscript(key: String) -> JSONValue? {
        get {
            for member in members where member.name == key { return member.value }
            return nil
        }
        set {
            guard let newValue else {
                members.removeAll { $0.name == key }
                return
            }
            if let index = members.firstIndex(where: { $0.name == key }) {
                members[index].value = newValue
            } else {
                members.append(JSONValue.Member(name: key, value: newValue))
            }
        }
    }

    public var keys: [String] { members.map(\.name) }

    /// The members as a dictionary (the first of a name written twice wins).
    public var dictionary: [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        out.reserveCapacity(members.count)
        for member in members where out[member.name] == nil { out[member.name] = member.value }
        return out
    }
}
