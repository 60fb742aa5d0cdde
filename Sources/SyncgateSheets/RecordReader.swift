import Foundation
import SyncgateCore
import SyncgateJSON

/// The record formats `rows: records` understands, chosen by the file's extension.
public enum RecordFormat: String, Sendable {
    case csv
    case json
    case ndjson

    public static func forExtension(_ ext: String) -> RecordFormat? {
        switch ext.lowercased() {
        case "csv": .csv
        case "json": .json
        case "ndjson", "jsonl": .ndjson
        default: nil
        }
    }
}

/// One record of a file: its fields in order, and the line it starts on.
public struct Record: Sendable, Hashable {
    public var line: Int
    public var fields: [JSONValue.Member]

    public subscript(name: String) -> JSONValue? { fields.first { $0.name == name }?.value }
}

/// A malformed record: the file's line number and what is wrong.
public struct RecordError: Error, Sendable, Hashable, CustomStringConvertible {
    public var line: Int
    public var message: String
    public init(line: Int, message: String) {
        self.line = line
        self.message = message
    }
    public var description: String { "line \(line): \(message)" }
}

/// Reads records from a file without loading it whole: the file is read in chunks (``FileReader``, `pread`)
/// and parsed byte by byte.
///
/// - CSV (RFC 4180): the first record is the header; fields may be quoted (`"a ""b"", c"`), quoted fields may
///   span lines; CRLF or LF line ends; blank lines are skipped; every record must have the header's field count.
/// - JSON: an array of objects (streamed element by element) or a single object.
/// - NDJSON / JSON Lines: one object per non-blank line.
public final class RecordReader {
    public let format: RecordFormat
    private let reader: FileReader
    private let chunkSize: Int
    private var chunk: [UInt8] = []
    private var position = 0
    private var fileOffset: Int64 = 0
    private var atEOF = false
    private var line = 1
    private var started = false
    private var finished = false
    // CSV
    private var header: [String]?
    // JSON array
    private enum ArrayState { case start, inArray, afterElement, single, done }
    private var arrayState = ArrayState.start

    /// Largest single record (a CSV record, an NDJSON line, a JSON array element).
    public static let maxRecordBytes = 64 << 20

    /// Bytes of the file consumed so far.
    public var bytesConsumed: Int64 { fileOffset - Int64(chunk.count - position) }

    public init(path: String, format: RecordFormat, chunkSize: Int = 64 << 10) throws {
        self.reader = try FileReader(path: path)
        self.format = format
        self.chunkSize = chunkSize
    }

    /// The CSV header (after the first ``next()``), nil for JSON.
    public var csvHeader: [String]? { header }

    /// The next record, or nil at the end of the file. Throws ``RecordError`` for malformed input.
    public func next() throws -> Record? {
        if finished { return nil }
        if !started {
            started = true
            try skipBOM()
        }
        let record: Record?
        switch format {
        case .csv: record = try nextCSV()
        case .ndjson: record = try nextNDJSON()
        case .json: record = try nextJSON()
        }
        if record == nil { finished = true }
        return record
    }

    // MARK: Bytes

    private func fill() throws -> Bool {
        if position < chunk.count { return true }
        if atEOF { return false }
        chunk = try reader.read(at: fileOffset, count: chunkSize)
        position = 0
        fileOffset += Int64(chunk.count)
        if chunk.isEmpty {
            atEOF = true
            return false
        }
        return true
    }

    private func peek() throws -> UInt8? {
        try fill() ? chunk[position] : nil
    }

    private func nextByte() throws -> UInt8? {
        guard try fill() else { return nil }
        let b = chunk[position]
        position += 1
        return b
    }

    private func skipBOM() throws {
        guard try peek() == 0xEF else { return }
        // The BOM is 3 bytes; they may straddle chunks only with absurdly small chunks, so check in place.
        if position + 2 < chunk.count, chunk[position + 1] == 0xBB, chunk[position + 2] == 0xBF { position += 3 }
    }

    private func text(_ bytes: [UInt8], line: Int) throws -> String {
        guard let s = String(validating: bytes, as: UTF8.self) else {
            throw RecordError(line: line, message: "text is not valid UTF-8")
        }
        return s
    }

    // MARK: CSV

    private enum CSVState { case fieldStart, unquoted, quoted, quoteInQuoted }

    /// One CSV record's raw fields, or nil at the end. Blank lines are skipped.
    private func nextCSVFields() throws -> (line: Int, fields: [String])? {
        while true {
            let startLine = line
            var fields: [String] = []
            var field: [UInt8] = []
            var state = CSVState.fieldStart
            var quoteLine = line
            var lineHasContent = false
            var size = 0
            func endField() throws {
                fields.append(try text(field, line: startLine))
                field.removeAll(keepingCapacity: true)
            }
            recordLoop: while true {
                guard let b = try nextByte() else {
                    if state == .quoted {
                        throw RecordError(line: quoteLine, message: "a quoted field is never closed (missing '\"')")
                    }
                    if !lineHasContent { return nil }
                    try endField()
                    break recordLoop
                }
                size += 1
                if size > RecordReader.maxRecordBytes {
                    throw RecordError(line: startLine, message: "record longer than \(RecordReader.maxRecordBytes >> 20) MiB")
                }
                let isLineEnd = b == 0x0A || b == 0x0D
                var crlf = false
                if b == 0x0D, try peek() == 0x0A {
                    _ = try nextByte()
                    crlf = true
                }
                switch state {
                case .fieldStart, .unquoted:
                    if isLineEnd {
                        line += 1
                        if !lineHasContent { break recordLoop }  // blank line
                        try endField()
                        break recordLoop
                    }
                    lineHasContent = true
                    if b == UInt8(ascii: ",") {
                        try endField()
                        state = .fieldStart
                    } else if b == UInt8(ascii: "\"") {
                        if state == .unquoted {
                            throw RecordError(line: line, message: "a '\"' inside an unquoted field (quote the whole field and double the quote: \"a \"\"b\"\"\")")
                        }
                        state = .quoted
                        quoteLine = line
                    } else {
                        field.append(b)
                        state = .unquoted
                    }
                case .quoted:
                    if b == UInt8(ascii: "\"") {
                        state = .quoteInQuoted
                    } else {
                        if isLineEnd {
                            line += 1
                            // Keep the line end as written (CRLF stays CRLF).
                            if crlf { field.append(0x0D) }
                            field.append(crlf ? 0x0A : b)
                        } else {
                            field.append(b)
                        }
                    }
                case .quoteInQuoted:
                    if b == UInt8(ascii: "\"") {
                        field.append(b)
                        state = .quoted
                    } else if b == UInt8(ascii: ",") {
                        try endField()
                        state = .fieldStart
                    } else if isLineEnd {
                        line += 1
                        try endField()
                        break recordLoop
                    } else {
                        throw RecordError(line: line, message: "unexpected '\(String(decoding: [b], as: UTF8.self))' after a closing quote (expected ',' or the end of the line)")
                    }
                }
            }
            if !lineHasContent && fields.isEmpty { continue }  // blank line
            return (startLine, fields)
        }
    }

    private func nextCSV() throws -> Record? {
        if header == nil {
            guard let first = try nextCSVFields() else { return nil }
            var seen = Set<String>()
            for name in first.fields where !name.isEmpty {
                if !seen.insert(name).inserted {
                    throw RecordError(line: first.line, message: "the header names column '\(name)' twice")
                }
            }
            header = first.fields
        }
        guard let header, let row = try nextCSVFields() else { return nil }
        guard row.fields.count == header.count else {
            throw RecordError(line: row.line, message: "\(row.fields.count) field\(row.fields.count == 1 ? "" : "s"), the header has \(header.count)")
        }
        return Record(line: row.line, fields: zip(header, row.fields).map { JSONValue.Member(name: $0, value: .string($1)) })
    }

    // MARK: NDJSON

    private func nextNDJSON() throws -> Record? {
        while true {
            let startLine = line
            var bytes: [UInt8] = []
            var sawAny = false
            while let b = try nextByte() {
                sawAny = true
                if b == 0x0A { break }
                bytes.append(b)
                if bytes.count > RecordReader.maxRecordBytes {
                    throw RecordError(line: startLine, message: "line longer than \(RecordReader.maxRecordBytes >> 20) MiB")
                }
            }
            if !sawAny { return nil }
            line += 1
            if bytes.last == 0x0D { bytes.removeLast() }
            if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            return try objectRecord(bytes, line: startLine, what: "line")
        }
    }

    private func objectRecord(_ bytes: [UInt8], line startLine: Int, what: String) throws -> Record {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            let newlines = bytes.prefix(min(error.offset, bytes.count)).reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
            throw RecordError(line: startLine + newlines, message: "invalid JSON: \(error.message)")
        }
        guard case .object(let members) = value else {
            throw RecordError(line: startLine, message: "expected a JSON object, found \(RecordReader.kind(value))")
        }
        return Record(line: startLine, fields: members.members)
    }

    static func kind(_ value: JSONValue) -> String {
        switch value {
        case .string: "a string"
        case .number: "a number"
        case .bool: "a boolean"
        case .null: "null"
        case .array: "an array"
        case .object: "an object"
        }
    }

    // MARK: JSON (array of objects, or one object)

    private func skipWhitespace() throws {
        while let b = try peek(), b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 {
            if b == 0x0A { line += 1 }
            position += 1
        }
    }

    private func nextJSON() throws -> Record? {
        while true {
            try skipWhitespace()
            switch arrayState {
            case .start:
                guard let b = try peek() else { throw RecordError(line: line, message: "the file is empty (expected a JSON array of objects or an object)") }
                if b == UInt8(ascii: "[") {
                    position += 1
                    arrayState = .inArray
                    try skipWhitespace()
                    if try peek() == UInt8(ascii: "]") {
                        position += 1
                        arrayState = .done
                    }
                } else if b == UInt8(ascii: "{") {
                    arrayState = .single
                    let (bytes, start) = try collectElement()
                    return try objectRecord(bytes, line: start, what: "object")
                } else {
                    throw RecordError(line: line, message: "expected a JSON array of objects or an object, found '\(String(decoding: [b], as: UTF8.self))'")
                }
            case .inArray:
                guard let b = try peek() else { throw RecordError(line: line, message: "the JSON array is never closed (missing ']')") }
                if b == UInt8(ascii: "]") || b == UInt8(ascii: ",") {
                    throw RecordError(line: line, message: "expected an array element, found '\(String(decoding: [b], as: UTF8.self))'")
                }
                let (bytes, start) = try collectElement()
                arrayState = .afterElement
                return try objectRecord(bytes, line: start, what: "element")
            case .afterElement:
                guard let b = try nextByte() else { throw RecordError(line: line, message: "the JSON array is never closed (missing ']')") }
                if b == UInt8(ascii: ",") {
                    arrayState = .inArray
                } else if b == UInt8(ascii: "]") {
                    arrayState = .done
                } else {
                    throw RecordError(line: line, message: "expected ',' or ']' after an array element, found '\(String(decoding: [b], as: UTF8.self))'")
                }
            case .single, .done:
                if let b = try peek() {
                    throw RecordError(line: line, message: "unexpected '\(String(decoding: [b], as: UTF8.self))' after the end of the JSON")
                }
                return nil
            }
        }
    }

    /// The bytes of one JSON value starting here (an object, array or scalar), tracking strings and nesting.
    private func collectElement() throws -> ([UInt8], Int) {
        let startLine = line
        var bytes: [UInt8] = []
        var depth = 0
        var inString = false
        var escaped = false
        while let b = try peek() {
            if !inString && depth == 0 && !bytes.isEmpty {
                // A scalar ends at a delimiter; a container ended when depth returned to 0.
                let first = bytes[0]
                if first == UInt8(ascii: "{") || first == UInt8(ascii: "[") { break }
                if b == UInt8(ascii: ",") || b == UInt8(ascii: "]") || b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { break }
            }
            position += 1
            bytes.append(b)
            if bytes.count > RecordReader.maxRecordBytes {
                throw RecordError(line: startLine, message: "JSON element longer than \(RecordReader.maxRecordBytes >> 20) MiB")
            }
            if b == 0x0A { line += 1 }
            if inString {
                if escaped { escaped = false } else if b == UInt8(ascii: "\\") { escaped = true } else if b == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch b {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
            default: break
            }
            if depth < 0 { throw RecordError(line: line, message: "unbalanced '\(String(decoding: [b], as: UTF8.self))'") }
        }
        if depth > 0 || inString {
            // Let the strict parser say precisely what is missing.
            _ = try objectRecord(bytes, line: startLine, what: "element")
            throw RecordError(line: line, message: "unexpected end of the file inside a JSON value")
        }
        return (bytes, startLine)
    }
}
