import Foundation
import Yams

/// The `Decoder` behind ``ConfigDecoder``: one per node.
struct NodeDecoder: Decoder {
    let node: Node
    let path: [ConfigKey]
    let owner: ConfigDecoder

    var codingPath: [any CodingKey] {
        path.map { step -> any CodingKey in
            switch step {
            case .key(let k): NameKey(k)
            case .index(let i): IndexKey(i)
            }
        }
    }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        try owner.visit(node, path: path)
        guard case .mapping(let mapping) = node else {
            throw owner.error(at: node, path: path, "expected a mapping, found \(node.kindName)")
        }
        owner.markRead(mapping, at: path, keys: [])
        return KeyedDecodingContainer(KeyedNodeContainer<Key>(mapping: mapping, node: node, path: path, owner: owner))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try owner.visit(node, path: path)
        guard case .sequence(let sequence) = node else {
            throw owner.error(at: node, path: path, "expected a list, found \(node.kindName)")
        }
        return UnkeyedNodeContainer(items: Array(sequence), path: path, owner: owner)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        try owner.visit(node, path: path)
        return SingleNodeContainer(node: node, path: path, owner: owner)
    }
}

/// Decodes one child node, turning value errors into located config errors.
func decodeChild<T: Decodable>(_ type: T.Type, node: Node, path: [ConfigKey], owner: ConfigDecoder) throws -> T {
    let single = SingleNodeContainer(node: node, path: path, owner: owner)
    return try single.decode(type)
}

struct KeyedNodeContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let mapping: Node.Mapping
    let node: Node
    let path: [ConfigKey]
    let owner: ConfigDecoder

    var codingPath: [any CodingKey] { NodeDecoder(node: node, path: path, owner: owner).codingPath }

    var allKeys: [Key] {
        mapping.compactMap { $0.key.string }.compactMap { Key(stringValue: $0) }
    }

    private func child(_ key: Key) -> Node? {
        owner.markRead(mapping, at: path, keys: [key.stringValue])
        return mapping.first { $0.key.string == key.stringValue }?.value
    }

    func contains(_ key: Key) -> Bool { child(key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool { child(key)?.isNull ?? true }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        guard let value = child(key) else {
            throw owner.error(at: node, path: path + [.key(key.stringValue)], "missing required key '\(key.stringValue)'")
        }
        return try decodeChild(type, node: value, path: path + [.key(key.stringValue)], owner: owner)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let value = child(key), !value.isNull else { return nil }
        return try decodeChild(type, node: value, path: path + [.key(key.stringValue)], owner: owner)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        guard let value = child(key) else {
            throw owner.error(at: node, path: path + [.key(key.stringValue)], "missing required key '\(key.stringValue)'")
        }
        return try NodeDecoder(node: value, path: path + [.key(key.stringValue)], owner: owner).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        guard let value = child(key) else {
            throw owner.error(at: node, path: path + [.key(key.stringValue)], "missing required key '\(key.stringValue)'")
        }
        return try NodeDecoder(node: value, path: path + [.key(key.stringValue)], owner: owner).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { NodeDecoder(node: node, path: path, owner: owner) }
    func superDecoder(forKey key: Key) throws -> any Decoder {
        NodeDecoder(node: child(key) ?? Node("~"), path: path + [.key(key.stringValue)], owner: owner)
    }
}

struct UnkeyedNodeContainer: UnkeyedDecodingContainer {
    let items: [Node]
    let path: [ConfigKey]
    let owner: ConfigDecoder
    var currentIndex = 0

    init(items: [Node], path: [ConfigKey], owner: ConfigDecoder) {
        self.items = items
        self.path = path
        self.owner = owner
    }

    var codingPath: [any CodingKey] { NodeDecoder(node: Node("~"), path: path, owner: owner).codingPath }
    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    private mutating func next() throws -> (Node, [ConfigKey]) {
        guard !isAtEnd else {
            throw owner.error(at: items.last, path: path, "expected more items in the list")
        }
        defer { currentIndex += 1 }
        return (items[currentIndex], path + [.index(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { return true }
        if items[currentIndex].isNull {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (node, childPath) = try next()
        return try decodeChild(type, node: node, path: childPath, owner: owner)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (node, childPath) = try next()
        return try NodeDecoder(node: node, path: childPath, owner: owner).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (node, childPath) = try next()
        return try NodeDecoder(node: node, path: childPath, owner: owner).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (node, childPath) = try next()
        return NodeDecoder(node: node, path: childPath, owner: owner)
    }
}

struct SingleNodeContainer: SingleValueDecodingContainer {
    let node: Node
    let path: [ConfigKey]
    let owner: ConfigDecoder

    var codingPath: [any CodingKey] { NodeDecoder(node: node, path: path, owner: owner).codingPath }

    func decodeNil() -> Bool { node.isNull }

    private func scalarText(_ what: String) throws -> String {
        guard case .scalar(let scalar) = node else {
            throw owner.error(at: node, path: path, "expected \(what), found \(node.kindName)")
        }
        return try owner.expand(scalar.string, node: node, path: path)
    }

    func decode(_ type: Bool.Type) throws -> Bool {
        switch try scalarText("true or false").lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        case let other: throw owner.error(at: node, path: path, "expected true or false, found '\(other)'")
        }
    }

    func decode(_ type: String.Type) throws -> String {
        if node.isNull { throw owner.error(at: node, path: path, "expected a string, found null") }
        return try scalarText("a string")
    }

    func decode(_ type: Double.Type) throws -> Double {
        let text = try scalarText("a number")
        guard let value = Double(text), value.isFinite else {
            throw owner.error(at: node, path: path, "expected a number, found '\(text)'")
        }
        return value
    }

    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }

    private func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let text = try scalarText("a whole number").replacingOccurrences(of: "_", with: "")
        if let value = T(text) { return value }
        if let big = Double(text), big == big.rounded() {
            throw owner.error(at: node, path: path, "\(text) is out of range (\(T.min)...\(T.max))")
        }
        throw owner.error(at: node, path: path, "expected a whole number, found '\(text)'")
    }

    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        switch type {
        case is String.Type: return try decode(String.self) as! T
        case is Bool.Type: return try decode(Bool.self) as! T
        case is Int.Type: return try decode(Int.self) as! T
        case is Int64.Type: return try decode(Int64.self) as! T
        case is Double.Type: return try decode(Double.self) as! T
        default: break
        }
        do {
            return try T(from: NodeDecoder(node: node, path: path, owner: owner))
        } catch let error as ConfigValueError {
            throw owner.locate(error, node: node, path: path)
        }
    }
}
