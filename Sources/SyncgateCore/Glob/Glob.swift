#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One gitignore-style pattern over `/`-separated relative paths.
///
/// - `*`, `?` and `[...]` (with `[!...]`) match within one path segment; `**` as a whole segment spans any
///   number of folders (including none).
/// - A pattern without `/` (other than a trailing one) matches a name at any depth, as in `.gitignore`.
/// - A leading `/` anchors the pattern to the source's root; a trailing `/` matches everything under a folder.
/// - A pattern that matches a folder matches every file below it (`**/.*` excludes `.git/config`).
/// - A leading `!` negates (meaningful in a ``GlobSet``).
/// - `{a,b}` gives alternatives, as in rclone's filters and the shells: `*.{jpg,png}` matches what `*.jpg` or
///   `*.png` matches (nested groups too; a group without a comma, or `\{`, is a literal brace).
public struct Glob: Sendable, Hashable, CustomStringConvertible {
    public let pattern: String
    public let isNegated: Bool
    /// The pattern once its `{a,b}` groups are expanded: it matches when one of them does.
    private let alternatives: [Alternative]

    /// At most this many patterns come out of one pattern's `{a,b}` groups.
    static let maxAlternatives = 256

    /// One pattern without `{a,b}` groups, split into segments.
    private struct Alternative: Sendable, Hashable {
        let segments: [String]
        /// `**`, `**/*` (and `*` unanchored): every file, decided without looking at the path.
        let matchesEverything: Bool
        /// For `**/X` (and `X` unanchored) with X one segment: the test a path's segment must pass; the pattern
        /// matches when any segment does (a folder's match counts for the files below it). Run on the path's bytes.
        let anySegment: SegmentTest?

        init(_ text: String, raw: String) throws {
            var text = text
            guard !text.isEmpty, text != "/" else { throw SyntaxError(message: "empty glob pattern '\(raw)'") }
            if text.hasSuffix("/") { text += "**" }
            let anchored = text.hasPrefix("/")
            if anchored { text.removeFirst() }
            var parts = text.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
            guard !parts.isEmpty else { throw SyntaxError(message: "empty glob pattern '\(raw)'") }
            if !anchored && parts.count == 1 { parts.insert("**", at: 0) }
            for part in parts {
                try Glob.checkSegment(part, raw: raw)
            }
            // Collapse runs of ** (they mean the same as one).
            var collapsed: [String] = []
            for part in parts where !(part == "**" && collapsed.last == "**") { collapsed.append(part) }
            segments = collapsed
            matchesEverything = collapsed == ["**"] || collapsed == ["**", "*"]
            anySegment = collapsed.count == 2 && collapsed[0] == "**" && collapsed[1] != "**" ? SegmentTest(collapsed[1]) : nil
        }

        func matches(_ path: String) -> Bool {
            if matchesEverything { return !path.isEmpty }
            if let anySegment {
                var path = path
                return path.withUTF8 { bytes in
                    var start = 0
                    for end in 0...bytes.count where end == bytes.count || bytes[end] == UInt8(ascii: "/") {
                        defer { start = end + 1 }
                        if end == start { continue }  // an empty segment ("a//b") is skipped, as split does
                        if anySegment.matches(UnsafeBufferPointer(rebasing: bytes[start..<end])) { return true }
                    }
                    return false
                }
            }
            let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
            // A match of a folder prefix counts (the pattern then names a folder).
            for end in stride(from: parts.count, through: 1, by: -1) where Glob.match(segments[...], parts[..<end]) {
                return true
            }
            return false
        }
    }

    /// One segment pattern, compiled: the common shapes compare bytes, the rest go to fnmatch.
    enum SegmentTest: Sendable, Hashable {
        case literal([UInt8])
        case suffix([UInt8])  // "*.png"
        case prefix([UInt8])  // "draft*"
        case other([CChar])  // for fnmatch, NUL-terminated

        init(_ segment: String) {
            let bytes = Array(segment.utf8)
            let special: Set<UInt8> = [UInt8(ascii: "*"), UInt8(ascii: "?"), UInt8(ascii: "["), UInt8(ascii: "\\")]
            let specials = bytes.filter(special.contains).count
            if specials == 0 {
                self = .literal(bytes)
            } else if specials == 1, bytes.first == UInt8(ascii: "*") {
                self = .suffix(Array(bytes.dropFirst()))
            } else if specials == 1, bytes.last == UInt8(ascii: "*") {
                self = .prefix(Array(bytes.dropLast()))
            } else {
                self = .other(segment.utf8CString.map { $0 })
            }
        }

        func matches(_ segment: UnsafeBufferPointer<UInt8>) -> Bool {
            switch self {
            case .literal(let bytes):
                return segment.elementsEqual(bytes)
            case .suffix(let bytes):
                return segment.count >= bytes.count && segment[(segment.count - bytes.count)...].elementsEqual(bytes)
            case .prefix(let bytes):
                return segment.count >= bytes.count && segment[..<bytes.count].elementsEqual(bytes)
            case .other(let pattern):
                return withUnsafeTemporaryAllocation(of: CChar.self, capacity: segment.count + 1) { name in
                    for (i, byte) in segment.enumerated() { name[i] = CChar(bitPattern: byte) }
                    name[segment.count] = 0
                    return fnmatch(pattern, name.baseAddress!, 0) == 0
                }
            }
        }
    }

    public struct SyntaxError: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }

    public init(_ raw: String) throws {
        pattern = raw
        var text = raw
        if text.hasPrefix("!") {
            isNegated = true
            text.removeFirst()
        } else {
            isNegated = false
        }
        if text.hasPrefix("\\!") || text.hasPrefix("\\#") { text.removeFirst() }
        // An empty pattern (or one that leaves an empty alternative) is refused by ``Alternative``.
        alternatives = try Glob.expandingBraces(text, raw: raw).map { try Alternative($0, raw: raw) }
    }

    /// `text` with its first `{a,b}` group expanded, then the groups of each result, until none is left (in
    /// order: `x{a,b}{1,2}` gives `xa1`, `xa2`, `xb1`, `xb2`). A brace that is escaped, inside `[...]`, never closed,
    /// or whose group has no comma at its own level is a literal character.
    static func expandingBraces(_ text: String, raw: String) throws -> [String] {
        let chars = Array(text)
        var index = 0
        var escaped = false
        var inBracket = false
        while index < chars.count {
            let ch = chars[index]
            defer { index += 1 }
            if escaped { escaped = false; continue }
            if ch == "\\" { escaped = true; continue }
            if inBracket { if ch == "]" { inBracket = false }; continue }
            if ch == "[" { inBracket = true; continue }
            guard ch == "{", let (close, commas) = closingBrace(chars, from: index), !commas.isEmpty else { continue }
            let prefix = String(chars[..<index]), suffix = String(chars[(close + 1)...])
            var parts: [String] = []
            var start = index + 1
            for comma in commas + [close] {
                parts.append(String(chars[start..<comma]))
                start = comma + 1
            }
            var out: [String] = []
            for part in parts {
                out += try expandingBraces(prefix + part + suffix, raw: raw)
                if out.count > maxAlternatives {
                    throw SyntaxError(message: "the '{a,b}' groups of glob '\(raw)' make more than \(maxAlternatives) patterns")
                }
            }
            return out
        }
        return [text]
    }

    /// The `}` that closes the `{` at `open`, and the commas at that group's own level; nil when it is never closed.
    private static func closingBrace(_ chars: [Character], from open: Int) -> (Int, [Int])? {
        var depth = 0
        var commas: [Int] = []
        var escaped = false
        var inBracket = false
        for index in open..<chars.count {
            let ch = chars[index]
            if escaped { escaped = false; continue }
            if ch == "\\" { escaped = true; continue }
            if inBracket { if ch == "]" { inBracket = false }; continue }
            switch ch {
            case "[": inBracket = true
            case "{": depth += 1
            case "}":
                depth -= 1
                if depth == 0 { return (index, commas) }
            case "," where depth == 1: commas.append(index)
            default: break
            }
        }
        return nil
    }

    fileprivate static func checkSegment(_ segment: String, raw: String) throws {
        if segment.contains("**") && segment != "**" {
            throw SyntaxError(message: "'**' must be a whole path segment in '\(raw)' (write '**/x' or '*x')")
        }
        var inBracket = false
        var escaped = false
        var bracketStart = segment.startIndex
        for index in segment.indices {
            let ch = segment[index]
            if escaped { escaped = false; continue }
            if ch == "\\" { escaped = true; continue }
            if !inBracket && ch == "[" { inBracket = true; bracketStart = index; continue }
            if inBracket && ch == "]" {
                let inner = segment.distance(from: bracketStart, to: index)
                // "[]" and "[!]" are not closed yet: ']' first in a class is literal.
                if inner == 1 || (inner == 2 && segment[segment.index(after: bracketStart)] == "!") { continue }
                inBracket = false
            }
        }
        if inBracket { throw SyntaxError(message: "unclosed '[' in glob '\(raw)'") }
        if escaped { throw SyntaxError(message: "glob '\(raw)' ends with a lone '\\'") }
    }

    public var description: String { pattern }

    /// Whether the pattern matches the path or one of its parent folders.
    public func matches(_ path: String) -> Bool {
        if alternatives.count == 1 { return alternatives[0].matches(path) }
        return alternatives.contains { $0.matches(path) }
    }

    fileprivate static func match(_ pattern: ArraySlice<String>, _ path: ArraySlice<String>) -> Bool {
        guard let first = pattern.first else { return path.isEmpty }
        if first == "**" {
            let rest = pattern.dropFirst()
            if rest.isEmpty { return true }
            var index = path.startIndex
            while index <= path.endIndex {
                if match(rest, path[index...]) { return true }
                index += 1
            }
            return false
        }
        guard let segment = path.first, fnmatch(first, segment, 0) == 0 else { return false }
        return match(pattern.dropFirst(), path.dropFirst())
    }
}

extension Glob: Decodable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            try self.init(text)
        } catch let error as SyntaxError {
            throw ConfigValueError(error.message)
        }
    }
}
