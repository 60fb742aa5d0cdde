/// Reads one JSON text (RFC 8259, strict) from bytes into a ``JSONValue``: one pass, no intermediate objects, object
/// members in their written order, numbers as their literal text. Invalid UTF-8 in a string, a lone surrogate,
/// nesting deeper than `maxDepth` or bytes after the value are errors; whitespace around the value is allowed. The
/// plugin protocol reads each answer line with it (the reader thread's hot path), SDL its RPC parameters, Sheets
/// each record.
public struct JSONParser {
    /// Why a text is not JSON, and where: `offset` counts bytes from the start of the text.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var offset: Int
        public var message: String
        public var description: String { "\(message) (at byte \(offset))" }
    }

    /// The nesting limit unless a caller gives its own.
    public static let defaultMaxDepth = 512

    private let bytes: ArraySlice<UInt8>
    private var index: Int
    private let maxDepth: Int

    public static func parse(_ bytes: ArraySlice<UInt8>, maxDepth: Int = defaultMaxDepth) throws(Failure) -> JSONValue {
        var parser = JSONParser(bytes: bytes, maxDepth: maxDepth)
        parser.skipSpace()
        let value = try parser.value(depth: 1)
        parser.skipSpace()
        if parser.index < bytes.endIndex {
            throw parser.failure(at: parser.index, "unexpected '\(printable(bytes[parser.index]))' after the JSON value")
        }
        return value
    }

    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(Failure) -> JSONValue {
        try parse(bytes[...], maxDepth: maxDepth)
    }

    public static func parse(_ text: String, maxDepth: Int = defaultMaxDepth) throws(Failure) -> JSONValue {
        try parse(Array(text.utf8)[...], maxDepth: maxDepth)
    }

    private init(bytes: ArraySlice<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.index = bytes.startIndex
        self.maxDepth = maxDepth
    }

    private func failure(at position: Int, _ message: String) -> Failure {
        Failure(offset: min(position, bytes.endIndex) - bytes.startIndex, message: message)
    }

    private static func printable(_ byte: UInt8) -> String {
        if byte >= 0x20 && byte < 0x7F { return String(UnicodeScalar(byte)) }
        let hex = String(byte, radix: 16, uppercase: true)
        return "\\x" + (hex.count == 1 ? "0" + hex : hex)
    }

    private mutating func skipSpace() {
        while index < bytes.endIndex, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
            index += 1
        }
    }

    private mutating func value(depth: Int) throws(Failure) -> JSONValue {
        guard index < bytes.endIndex else { throw failure(at: index, "unexpected end of JSON") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw failure(at: index, "unexpected '\(Self.printable(bytes[index]))' where a JSON value should start")
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard bytes.endIndex - index >= count else { throw failure(at: index, "invalid literal (expected \(word))") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw failure(at: index, "invalid literal (expected \(word))")
        }
        index += count
    }

    private mutating func object(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= maxDepth else { throw failure(at: index, "JSON nested too deeply") }
        index += 1
        var members: [JSONValue.Member] = []
        skipSpace()
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(JSONObject(members))
        }
        while true {
            skipSpace()
            guard index < bytes.endIndex, bytes[index] == UInt8(ascii: "\"") else { throw failure(at: index, "expected a quoted member name") }
            let name = try string()
            skipSpace()
            guard index < bytes.endIndex, bytes[index] == UInt8(ascii: ":") else {
                throw failure(at: index, "expected ':' after member name \"\(name)\"")
            }
            index += 1
            skipSpace()
            members.append(JSONValue.Member(name: name, value: try value(depth: depth + 1)))
            skipSpace()
            guard index < bytes.endIndex else { throw failure(at: index, "unexpected end of JSON inside an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else {
                throw failure(at: index, "expected ',' or '}' in an object, found '\(Self.printable(bytes[index]))'")
            }
            index += 1
            return .object(JSONObject(members))
        }
    }

    private mutating func array(depth: Int) throws(Failure) -> JSONValue {
        guard depth <= maxDepth else { throw failure(at: index, "JSON nested too deeply") }
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
            guard index < bytes.endIndex else { throw failure(at: index, "unexpected end of JSON inside an array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "]") else {
                throw failure(at: index, "expected ',' or ']' in an array, found '\(Self.printable(bytes[index]))'")
            }
            index += 1
            return .array(items)
        }
    }

    private mutating func digits() -> Int {
        let start = index
        while index < bytes.endIndex, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
        return index - start
    }

    /// A number's literal text, checked against RFC 8259's grammar (no leading zero, digits after `.` and in the
    /// exponent); its value is not computed here.
    private mutating func number() throws(Failure) -> String {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.endIndex else { throw failure(at: start, "invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.endIndex, bytes[index] >= 0x30, bytes[index] <= 0x39 { throw failure(at: start, "invalid number (leading zero)") }
        } else if digits() == 0 {
            throw failure(at: start, "invalid number")
        }
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: ".") {
            index += 1
            if digits() == 0 { throw failure(at: start, "invalid number (no digits after '.')") }
        }
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.endIndex, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            if digits() == 0 { throw failure(at: start, "invalid number (no digits in exponent)") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// A string literal starting at its quote; `index` ends past the closing quote.
    private mutating func string() throws(Failure) -> String {
        let quote = index
        index += 1
        let start = index
        // Fast path: no escape, the bytes are the string.
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                guard let text = String(validating: bytes[start..<index], as: UTF8.self) else {
                    throw failure(at: quote, "string is not valid UTF-8")
                }
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw failure(at: index, "control character in a string (escape it)") }
            index += 1
        }
        var out: [UInt8] = Array(bytes[start..<index])
        while true {
            guard index < bytes.endIndex else { throw failure(at: quote, "unterminated string") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                guard let text = String(validating: out, as: UTF8.self) else { throw failure(at: quote, "string is not valid UTF-8") }
                index += 1
                return text
            }
            guard byte >= 0x20 else { throw failure(at: index, "control character in a string (escape it)") }
            if byte != UInt8(ascii: "\\") {
                out.append(byte)
                index += 1
                continue
            }
            index += 1
            guard index < bytes.endIndex else { throw failure(at: quote, "unterminated string") }
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
                if (0xD800...0xDBFF).contains(scalar) {
                    guard bytes.endIndex - index >= 2, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw failure(at: index, "lone surrogate in \\u escape")
                    }
                    index += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw failure(at: index, "invalid surrogate pair") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw failure(at: index, "lone surrogate in \\u escape")
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw failure(at: index, "invalid \\u escape") }
                out.append(contentsOf: String(Character(unicode)).utf8)
            default:
                throw failure(at: index - 1, "invalid escape '\\\(Self.printable(escape))'")
            }
        }
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard bytes.endIndex - index >= 4 else { throw failure(at: index, "short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case 0x30...0x39: digit = UInt32(byte - 0x30)
            case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
            default: throw failure(at: index, "invalid hex digit in \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
