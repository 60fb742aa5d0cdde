/// A bounds-checked cursor over BSON bytes.
struct BSONReader {
    let bytes: [UInt8]
    var position = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
        guard count >= 0, count <= bytes.count - position else {
            throw SDLError.malformedBSON("needs \(count) bytes at offset \(position), only \(bytes.count - position) left")
        }
        defer { position += count }
        return bytes[position..<(position + count)]
    }

    mutating func uint32() throws -> UInt32 {
        let raw = try take(4)
        var value: UInt32 = 0
        for (i, byte) in raw.enumerated() { value |= UInt32(byte) << (8 * UInt32(i)) }
        return value
    }

    mutating func uint64() throws -> UInt64 {
        let raw = try take(8)
        var value: UInt64 = 0
        for (i, byte) in raw.enumerated() { value |= UInt64(byte) << (8 * UInt64(i)) }
        return value
    }

    mutating func cString(limit: Int) throws -> String {
        guard let end = bytes[position..<limit].firstIndex(of: 0) else {
            throw SDLError.malformedBSON("unterminated key at offset \(position)")
        }
        let raw = bytes[position..<end]
        position = end + 1
        guard let text = String(validating: raw, as: UTF8.self) else {
            throw SDLError.malformedBSON("key is not UTF-8")
        }
        return text
    }

    mutating func document(depth: Int) throws -> BSONDocument {
        guard depth <= BSONDocument.maxDepth else {
            throw SDLError.malformedBSON("nested deeper than \(BSONDocument.maxDepth)")
        }
        let start = position
        let length = Int(try uint32())
        guard length >= 5, length <= bytes.count - start else {
            throw SDLError.malformedBSON("document length \(length) does not fit the \(bytes.count - start) bytes available")
        }
        let end = start + length
        guard bytes[end - 1] == 0 else { throw SDLError.malformedBSON("document does not end with a zero byte") }
        var elements: [BSONDocument.Element] = []
        while position < end - 1 {
            let type = try take(1).first!
            let key = try cString(limit: end - 1)
            let value: BSONValue
            switch type {
            case 0x01: value = .double(Double(bitPattern: try uint64()))
            case 0x02:
                let size = Int(try uint32())
                guard size >= 1, size <= end - 1 - position else {
                    throw SDLError.malformedBSON("string \"\(key)\" of \(size) bytes overruns its document")
                }
                let raw = try take(size)
                guard raw.last == 0 else { throw SDLError.malformedBSON("string \"\(key)\" is not zero-terminated") }
                guard let text = String(validating: raw.dropLast(), as: UTF8.self) else {
                    throw SDLError.malformedBSON("string \"\(key)\" is not UTF-8")
                }
                value = .string(text)
            case 0x03, 0x04:
                var sub = BSONReader(bytes: Array(bytes[position..<(end - 1)]))
                let document = try sub.document(depth: depth + 1)
                position += sub.position
                value = type == 0x03 ? .document(document) : .array(document.elements.map(\.value))
            case 0x08:
                let raw = try take(1).first!
                guard raw <= 1 else { throw SDLError.malformedBSON("boolean \"\(key)\" is \(raw)") }
                value = .bool(raw == 1)
            case 0x0A: value = .null
            case 0x10: value = .int32(Int32(bitPattern: try uint32()))
            case 0x12: value = .int64(Int64(bitPattern: try uint64()))
            default:
                throw SDLError.malformedBSON("unsupported element type 0x\(String(type, radix: 16)) for \"\(key)\"")
            }
            elements.append(BSONDocument.Element(key, value))
        }
        guard position == end - 1 else { throw SDLError.malformedBSON("elements overrun the document length") }
        position = end
        return BSONDocument(elements)
    }
}
