/// Reads one JSON text (RFC 8259) from bytes into a ``JSONValue``: the plugin's answers, one per line. Written for
/// the reader thread's hot path (two answers per file): one pass, no intermediate objects, nesting at most 64 deep;
/// invalid UTF-8, a lone surrogate or trailing bytes are errors.
struct JSONLineParser {
    struct Failure: Error {}

    private let bytes: ArraySlice<UInt8>
    private var index: Int
    private static let maxDepth = 64

    static func parse(_ bytes: ArraySlice<UInt8>) throws(Failure) -> JSONValue {
        var parser = JSONLineParser(bytes: bytes, index: bytes.startIndex)
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == bytes.endIndex else { throw Failure() }
        return value
    }

    private init(bytes: ArraySlice<UInt8>, index: Int) {
        self.bytes = bytes
        self.index = index
    }

    private mutating func skipSpace() {
        while index < bytes.endIndex, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
            index += 1
        }
    }

    private mutating func value(depth: Int) throws(Failure) -> JSONValue {
        guard index < bytes.endIndex, depth <= JSONLineParser.maxDepth else { throw Failure() }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            var object: [String: JSONValue] = [:]
            skipSpace()
            if index < bytes.endIndex, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(object)
            }
            while true {
                skipSpace()
                guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "\"") else { throw Failure() }
                let key = try string()
                skipSpace()
                guard index < bytes.endIndex, bytes[index] == UInt8(ascii: ":") else { throw Failure() }
                index += 1
                skipSpace()
                object[key] = try value(depth: depth + 1)
                skipSpace()
                guard index < bytes.endIndex else { throw Failure() }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "}") else { throw Failure() }
                index += 1
                return .object(object)
            }
        case UInt8(ascii: "["):
            index += 1
            var items: [JSONValue] = []
            skipSpace()
            if index < bytes.endIndex, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                skipSpace()
                items.append(try value(depth: depth + 1))
                skipSpace()
                guard index < bytes.endIndex else { throw Failure() }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard bytes[index] == UInt8(ascii: "]") else { throw Failure() }
                index += 1
                return .array(items)
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        default:
            return .number(try number())
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard bytes.endIndex - index >= count else { throw Failure() }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { throw Failure() }
        index += count
    }

    private mutating func number() throws(Failure) -> Double {
        let start = index
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: "-") { index += 1 }
        var digits = 0
        var leadingZero = false
        while index < bytes.endIndex, bytes[index] >= 0x30, bytes[index] <= 0x39 {
            if digits == 0 && bytes[index] == 0x30 { leadingZero = true }
            digits += 1
            index += 1
        }
        guard digits > 0, !(leadingZero && digits > 1) else { throw Failure() }
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: ".") {
            index += 1
            let before = index
            while index < bytes.endIndex, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            guard index > before else { throw Failure() }
        }
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.endIndex, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            let before = index
            while index < bytes.endIndex, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            guard index > before else { throw Failure() }
        }
        guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)), value.isFinite else { throw Failure() }
        return value
    }

    /// A string literal starting at the quote; index ends past the closing quote.
    private mutating func string() throws(Failure) -> String {
        index += 1
        let start = index
        // Fast path: no escape.
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                guard let text = String(validating: bytes[start..<index], as: UTF8.self) else { throw Failure() }
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw Failure() }
            index += 1
        }
        var out: [UInt8] = Array(bytes[start..<index])
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                guard let text = String(validating: out, as: UTF8.self) else { throw Failure() }
                index += 1
                return text
            }
            guard byte >= 0x20 else { throw Failure() }
            if byte != UInt8(ascii: "\\") {
                out.append(byte)
                index += 1
                continue
            }
            index += 1
            guard index < bytes.endIndex else { throw Failure() }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800..<0xDC00).contains(scalar) {
                    guard bytes.endIndex - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else { throw Failure() }
                    index += 2
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw Failure() }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(scalar) {
                    throw Failure()
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw Failure() }
                out.append(contentsOf: String(Character(unicode)).utf8)
            default:
                throw Failure()
            }
        }
        throw Failure()
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard bytes.endIndex - index >= 4 else { throw Failure() }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case 0x30...0x39: digit = UInt32(byte - 0x30)
            case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
            default: throw Failure()
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
