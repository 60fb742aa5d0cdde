import Foundation

/// A strict RFC 8259 parser for one JSON text held in memory (one NDJSON line, one element of a JSON array).
/// Errors carry the byte offset, which ``RecordReader`` turns into a line number.
struct JSONValueParser {
    struct Failure: Error {
        var offset: Int
        var message: String
    }

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0
    static let maxDepth = 512

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Parses the whole input as one JSON value (whitespace around it allowed).
    static func parse(_ bytes: [UInt8]) throws(Failure) -> JSONValue {
        var parser = JSONValueParser(bytes)
        parser.skipWhitespace()
        let value = try parser.value()
        parser.skipWhitespace()
        if parser.index < bytes.count {
            throw Failure(offset: parser.index, message: "unexpected '\(parser.printable(bytes[parser.index]))' after the JSON value")
        }
        return value
    }

    private func printable(_ byte: UInt8) -> String {
        byte >= 0x20 && byte < 0x7F ? String(UnicodeScalar(byte)) : String(format: "\\x%02X", byte)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
            index += 1
        }
    }

    private mutating func value() throws(Failure) -> JSONValue {
        guard index < bytes.count else { throw Failure(offset: index, message: "unexpected end of JSON") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw Failure(offset: index, message: "unexpected '\(printable(bytes[index]))' where a JSON value should start")
        }
    }

    private mutating func literal(_ word: String) throws(Failure) {
        let expected = Array(word.utf8)
        guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected else {
            throw Failure(offset: index, message: "invalid literal (expected \(word))")
        }
        index += expected.count
    }

    private mutating func object() throws(Failure) -> JSONValue {
        depth += 1
        guard depth <= JSONValueParser.maxDepth else { throw Failure(offset: index, message: "JSON nested too deeply") }
        defer { depth -= 1 }
        index += 1
        var members: [JSONValue.Member] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw Failure(offset: min(index, bytes.count), message: "expected a quoted member name")
            }
            let name = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw Failure(offset: min(index, bytes.count), message: "expected ':' after member name \"\(name)\"")
            }
            index += 1
            skipWhitespace()
            members.append(JSONValue.Member(name: name, value: try value()))
            skipWhitespace()
            guard index < bytes.count else { throw Failure(offset: index, message: "unexpected end of JSON inside an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            throw Failure(offset: index, message: "expected ',' or '}' in an object, found '\(printable(bytes[index]))'")
        }
    }

    private mutating func array() throws(Failure) -> JSONValue {
        depth += 1
        guard depth <= JSONValueParser.maxDepth else { throw Failure(offset: index, message: "JSON nested too deeply") }
        defer { depth -= 1 }
        index += 1
        var items: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(items)
        }
        while true {
            skipWhitespace()
            items.append(try value())
            skipWhitespace()
            guard index < bytes.count else { throw Failure(offset: index, message: "unexpected end of JSON inside an array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            throw Failure(offset: index, message: "expected ',' or ']' in an array, found '\(printable(bytes[index]))'")
        }
    }

    private mutating func number() throws(Failure) -> String {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        func digits(_ p: inout Int, _ b: [UInt8]) -> Int {
            let s = p
            while p < b.count, b[p] >= 0x30, b[p] <= 0x39 { p += 1 }
            return p - s
        }
        guard index < bytes.count else { throw Failure(offset: index, message: "invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                throw Failure(offset: start, message: "invalid number (leading zero)")
            }
        } else if digits(&index, bytes) == 0 {
            throw Failure(offset: start, message: "invalid number")
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            if digits(&index, bytes) == 0 { throw Failure(offset: start, message: "invalid number (no digits after '.')") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            if digits(&index, bytes) == 0 { throw Failure(offset: start, message: "invalid number (no digits in exponent)") }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private mutating func string() throws(Failure) -> String {
        let start = index
        index += 1
        var out: [UInt8] = []
        while true {
            guard index < bytes.count else { throw Failure(offset: start, message: "unterminated string") }
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                index += 1
                guard let text = String(validating: out, as: UTF8.self) else {
                    throw Failure(offset: start, message: "string is not valid UTF-8")
                }
                return text
            }
            if b < 0x20 { throw Failure(offset: index, message: "control character in a string (escape it)") }
            if b != UInt8(ascii: "\\") {
                out.append(b)
                index += 1
                continue
            }
            index += 1
            guard index < bytes.count else { throw Failure(offset: start, message: "unterminated string") }
            let e = bytes[index]
            index += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                        throw Failure(offset: index, message: "lone surrogate in \\u escape")
                    }
                    index += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw Failure(offset: index, message: "invalid surrogate pair") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw Failure(offset: index, message: "lone surrogate in \\u escape")
                }
                guard let us = Unicode.Scalar(scalar) else { throw Failure(offset: index, message: "invalid \\u escape") }
                out.append(contentsOf: Array(String(Character(us)).utf8))
            default:
                throw Failure(offset: index - 1, message: "invalid escape '\\\(printable(e))'")
            }
        }
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw Failure(offset: index, message: "short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[index]
            let digit: UInt32
            switch b {
            case 0x30...0x39: digit = UInt32(b - 0x30)
            case 0x41...0x46: digit = UInt32(b - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(b - 0x61 + 10)
            default: throw Failure(offset: index, message: "invalid hex digit in \\u escape")
            }
            value = value * 16 + digit
            index += 1
        }
        return value
    }
}
