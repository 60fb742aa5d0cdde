import NIOCore

/// An ordered BSON document with a strict, bounded encoder and decoder (BSON 1.1: little-endian, int32
/// total length, elements, a terminating zero).
public struct BSONDocument: Sendable, Hashable, CustomStringConvertible {
    public struct Element: Sendable, Hashable {
        public var key: String
        public var value: BSONValue
        public init(_ key: String, _ value: BSONValue) {
            self.key = key
            self.value = value
        }
    }

    public var elements: [Element]

    /// Largest document the decoder accepts unless told otherwise.
    public static let defaultMaxSize = 64 * 1024
    /// Deepest nesting of documents and arrays the decoder accepts.
    public static let maxDepth = 16

    public init(_ elements: [Element] = []) { self.elements = elements }

    public init(_ pairs: KeyValuePairs<String, BSONValue>) {
        self.elements = pairs.map { Element($0.key, $0.value) }
    }

    public subscript(key: String) -> BSONValue? {
        get { elements.first { $0.key == key }?.value }
        set {
            if let index = elements.firstIndex(where: { $0.key == key }) {
                if let newValue { elements[index].value = newValue } else { elements.remove(at: index) }
            } else if let newValue {
                elements.append(Element(key, newValue))
            }
        }
    }

    public var keys: [String] { elements.map(\.key) }

    public var description: String {
        "{" + elements.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
    }

    // MARK: Encoding

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        BSONDocument.append(self, to: &out)
        return out
    }

    public func encodedBuffer() -> ByteBuffer { ByteBuffer(bytes: encoded()) }

    private static func append(_ document: BSONDocument, to out: inout [UInt8]) {
        let start = out.count
        out.append(contentsOf: [0, 0, 0, 0])
        for element in document.elements {
            out.append(element.value.typeByte)
            out.append(contentsOf: Array(element.key.utf8.filter { $0 != 0 }))
            out.append(0)
            append(element.value, to: &out)
        }
        out.append(0)
        let length = UInt32(out.count - start)
        withUnsafeBytes(of: length.littleEndian) { raw in
            for i in 0..<4 { out[start + i] = raw[i] }
        }
    }

    private static func append(_ value: BSONValue, to out: inout [UInt8]) {
        switch value {
        case .double(let d): withUnsafeBytes(of: d.bitPattern.littleEndian) { out.append(contentsOf: $0) }
        case .string(let s):
            let bytes = Array(s.utf8)
            withUnsafeBytes(of: UInt32(bytes.count + 1).littleEndian) { out.append(contentsOf: $0) }
            out.append(contentsOf: bytes)
            out.append(0)
        case .document(let d): append(d, to: &out)
        case .array(let items):
            append(BSONDocument(items.enumerated().map { Element(String($0.offset), $0.element) }), to: &out)
        case .bool(let b): out.append(b ? 1 : 0)
        case .null: break
        case .int32(let v): withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) }
        case .int64(let v): withUnsafeBytes(of: v.littleEndian) { out.append(contentsOf: $0) }
        }
    }

    // MARK: Decoding

    /// Decodes exactly one document filling `bytes`. Throws ``SDLError/malformedBSON(_:)`` for anything out of
    /// bounds, truncated, unterminated, of an unknown type, nested too deep, or larger than `maxSize`.
    public init(decoding bytes: [UInt8], maxSize: Int = BSONDocument.defaultMaxSize) throws {
        guard bytes.count <= maxSize else {
            throw SDLError.malformedBSON("document of \(bytes.count) bytes exceeds the limit of \(maxSize)")
        }
        var reader = BSONReader(bytes: bytes)
        let document = try reader.document(depth: 0)
        guard reader.position == bytes.count else {
            throw SDLError.malformedBSON("\(bytes.count - reader.position) bytes after the document")
        }
        self = document
    }

    public init(decoding buffer: ByteBuffer, maxSize: Int = BSONDocument.defaultMaxSize) throws {
        guard buffer.readableBytes <= maxSize else {
            throw SDLError.malformedBSON("document of \(buffer.readableBytes) bytes exceeds the limit of \(maxSize)")
        }
        try self.init(decoding: buffer.getBytes(at: buffer.readerIndex, length: buffer.readableBytes) ?? [], maxSize: maxSize)
    }
}
