import Foundation

/// Scrubs registered secrets from any text that leaves the process (logs, errors, events, the ledger).
///
/// A secret is scrubbed in every form it takes on the way out, not only as written: JSON-escaped once or twice
/// (`\"`, `\\`, `\/`, `\u00fc`), HTML-escaped, percent-encoded (whichever characters the encoder escapes, upper-
/// or lower-case hex, `+` for space) and base64 (standard and URL-safe, alone or at any alignment inside a longer
/// base64 text). An answer that echoes a request body therefore cannot carry a secret past it.
///
/// Cut text before it is shown with ``snippet(_:limit:)``, which redacts first: cutting first could leave a
/// secret's beginning that no longer matches. As a second line, a fragment of a secret's start (4 bytes or more)
/// that ends right at a cut mark (`...` or `…`) is scrubbed too.
public final class Redactor: @unchecked Sendable {
    public static let shared = Redactor()
    /// What a secret is replaced with.
    public static let mark = "<redacted>"
    private let lock = NSLock()
    private var secrets: [String] = []
    private var patterns = Patterns()

    public init() {}

    /// Registers a secret. Values shorter than 4 characters are too common to scrub safely and are ignored.
    public func register(_ secret: String) {
        let trimmed = secret.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.count >= 4 else { return }
        lock.lock()
        defer { lock.unlock() }
        guard !secrets.contains(trimmed) else { return }
        secrets.append(trimmed)
        var needles: [[UInt8]] = []
        var decoded: [[UInt8]] = []
        var prefixes: [[UInt8]] = []
        for secret in secrets {
            let forms = Encodings(secret)
            needles += forms.all.map { Array($0.utf8) }
            decoded += forms.percentDecoded.map { Array($0.utf8) }
            prefixes += forms.textual.map { Array($0.utf8) }
        }
        patterns = Patterns(needles: needles, decodedNeedles: decoded, prefixNeedles: prefixes)
    }

    /// `text` with every registered secret, in every encoding, replaced by `<redacted>`.
    public func redact(_ text: String) -> String {
        lock.lock()
        let patterns = self.patterns
        lock.unlock()
        guard !patterns.isEmpty else { return text }
        let bytes = Array(text.utf8)
        guard let scrubbed = patterns.scrub(bytes) else { return text }
        return String(decoding: scrubbed, as: UTF8.self)
    }

    /// `text` redacted, then cut to at most `limit` characters (plus `...` when cut). A `<redacted>` mark is never
    /// cut in two.
    public func snippet(_ text: String, limit: Int = 300) -> String {
        let redacted = redact(text.trimmingCharacters(in: .whitespacesAndNewlines))
        guard redacted.count > limit else { return redacted }
        var end = redacted.index(redacted.startIndex, offsetBy: limit)
        // Keep a mark that straddles the cut whole.
        let window = redacted.index(end, offsetBy: -(Redactor.mark.count - 1), limitedBy: redacted.startIndex) ?? redacted.startIndex
        if let mark = redacted.range(of: Redactor.mark, range: window..<redacted.endIndex), mark.lowerBound < end, mark.upperBound > end {
            end = mark.upperBound
        }
        return String(redacted[..<end]) + "..."
    }

    /// An error code as it is kept and shown (the ledger's `error_code`, `status --json`, events): a code comes
    /// from elsewhere (a plugin's answer, S3's or STS's `<Code>`) and may echo a secret like any message, so it is
    /// redacted, then cut to ``codeLimit`` characters.
    public func redactCode(_ code: String) -> String {
        snippet(code, limit: Redactor.codeLimit)
    }

    /// The longest error code kept (a real one is a short word: `AccessDenied`, `name-clash`).
    public static let codeLimit = 128
}

extension Redactor {
    /// The compiled needles of a ``Redactor``, as UTF-8 bytes: every exact form of every secret, indexed by their
    /// first two bytes so that a text is scanned once; the forms also matched percent-encoded (any byte as `%XX`,
    /// either case, a space as `+`), only scanned for in a text holding `%` or `+`; and the forms whose first bytes
    /// are scrubbed before a cut mark, indexed by their first four bytes.
    struct Patterns: Sendable {
        /// Exact forms, longest first.
        let needles: [[UInt8]]
        /// Forms matched through percent-encoding, longest first.
        let decodedNeedles: [[UInt8]]
        /// Forms whose leading fragment is scrubbed before a cut mark.
        let prefixNeedles: [[UInt8]]
        /// Bit per two-byte start of some exact needle.
        private let starts: [UInt64]
        /// Exact needle indices (longest first) per two-byte start.
        private let buckets: [UInt16: [Int]]
        /// Bit per two-byte start of some prefix needle.
        private let fragmentStarts: [UInt64]
        /// Prefix needle indices per four-byte start.
        private let fragmentBuckets: [UInt32: [Int]]
        private let longestPrefix: Int
        static let minimumFragment = 4

        init(needles: [[UInt8]] = [], decodedNeedles: [[UInt8]] = [], prefixNeedles: [[UInt8]] = []) {
            func longestFirst(_ list: [[UInt8]], atLeast minimum: Int) -> [[UInt8]] {
                Array(Set(list.filter { $0.count >= minimum })).sorted { $0.count != $1.count ? $0.count > $1.count : $0.lexicographicallyPrecedes($1) }
            }
            self.needles = longestFirst(needles, atLeast: 2)
            self.decodedNeedles = longestFirst(decodedNeedles, atLeast: 2)
            self.prefixNeedles = longestFirst(prefixNeedles, atLeast: Patterns.minimumFragment + 1)
            var starts = [UInt64](repeating: 0, count: 1024)
            var buckets: [UInt16: [Int]] = [:]
            for (index, needle) in self.needles.enumerated() {
                let key = UInt16(needle[0]) << 8 | UInt16(needle[1])
                starts[Int(key) >> 6] |= 1 << UInt64(key & 63)
                buckets[key, default: []].append(index)
            }
            var fragmentStarts = [UInt64](repeating: 0, count: 1024)
            var fragmentBuckets: [UInt32: [Int]] = [:]
            for (index, needle) in self.prefixNeedles.enumerated() {
                let key = UInt16(needle[0]) << 8 | UInt16(needle[1])
                fragmentStarts[Int(key) >> 6] |= 1 << UInt64(key & 63)
                let word = needle.withUnsafeBufferPointer { Patterns.word($0, 0) }
                fragmentBuckets[word, default: []].append(index)
            }
            self.fragmentStarts = fragmentStarts
            self.starts = starts
            self.buckets = buckets
            self.fragmentBuckets = fragmentBuckets
            longestPrefix = self.prefixNeedles.first?.count ?? 0
        }

        var isEmpty: Bool { needles.isEmpty }

        /// The text with needles replaced, or nil when nothing matched.
        func scrub(_ text: [UInt8]) -> [UInt8]? {
            var current = text
            var changed = false
            if let exact = replace(in: current, exactMatches(current)) {
                current = exact
                changed = true
            }
            if current.contains(0x25) || current.contains(0x2B), let decoded = replace(in: current, percentMatches(current)) {
                current = decoded
                changed = true
            }
            if let fragments = replace(in: current, fragmentMatches(current)) {
                current = fragments
                changed = true
            }
            return changed ? current : nil
        }

        /// `text` with the (ordered, disjoint) ranges replaced by the mark; nil when there are none.
        func replace(in text: [UInt8], _ ranges: [Range<Int>]) -> [UInt8]? {
            guard !ranges.isEmpty else { return nil }
            var out: [UInt8] = []
            out.reserveCapacity(text.count + 16)
            var copied = 0
            for range in ranges where range.lowerBound >= copied {
                out.append(contentsOf: text[copied..<range.lowerBound])
                out.append(contentsOf: Redactor.mark.utf8)
                copied = range.upperBound
            }
            out.append(contentsOf: text[copied...])
            return out
        }

        /// Where exact forms occur (leftmost, longest first).
        func exactMatches(_ text: [UInt8]) -> [Range<Int>] {
            var found: [Range<Int>] = []
            text.withUnsafeBufferPointer { t in
                let n = t.count
                var i = 0
                while i + 1 < n {
                    let key = UInt16(t[i]) << 8 | UInt16(t[i + 1])
                    if starts[Int(key) >> 6] & (1 << UInt64(key & 63)) != 0, let bucket = buckets[key] {
                        var matched = 0
                        for index in bucket where Patterns.equal(needles[index], needles[index].count, t, at: i) {
                            matched = needles[index].count
                            break
                        }
                        if matched > 0 {
                            found.append(i..<(i + matched))
                            i += matched
                            continue
                        }
                    }
                    i += 1
                }
            }
            return found
        }

        /// Where forms occur percent-encoded.
        func percentMatches(_ text: [UInt8]) -> [Range<Int>] {
            guard !decodedNeedles.isEmpty else { return [] }
            var found: [Range<Int>] = []
            text.withUnsafeBufferPointer { t in
                var i = 0
                while i < t.count {
                    var matched = 0
                    for needle in decodedNeedles {
                        if let length = Patterns.percentEncoded(needle, t, at: i) {
                            matched = length
                            break
                        }
                    }
                    if matched > 0 {
                        found.append(i..<(i + matched))
                        i += matched
                    } else {
                        i += 1
                    }
                }
            }
            return found
        }

        /// Where a form's first bytes (4 or more, not all of it) end right at a `...` or `…` cut mark.
        func fragmentMatches(_ text: [UInt8]) -> [Range<Int>] {
            guard longestPrefix > 0 else { return [] }
            var found: [Range<Int>] = []
            text.withUnsafeBufferPointer { t in
                var i = Patterns.minimumFragment
                while i + 2 < t.count {
                    let dots = t[i] == 0x2E && t[i + 1] == 0x2E && t[i + 2] == 0x2E
                    guard dots || (t[i] == 0xE2 && t[i + 1] == 0x80 && t[i + 2] == 0xA6) else {
                        i += 1
                        continue
                    }
                    let cut = i
                    // The farthest start first: the longest fragment.
                    var start = max(found.last?.upperBound ?? 0, cut - (longestPrefix - 1))
                    search: while cut - start >= Patterns.minimumFragment {
                        let key = UInt16(t[start]) << 8 | UInt16(t[start + 1])
                        if fragmentStarts[Int(key) >> 6] & (1 << UInt64(key & 63)) != 0, let bucket = fragmentBuckets[Patterns.word(t, start)] {
                            for index in bucket where prefixNeedles[index].count > cut - start {
                                if Patterns.equal(prefixNeedles[index], cut - start, t, at: start) {
                                    found.append(start..<cut)
                                    break search
                                }
                            }
                        }
                        start += 1
                    }
                    i = cut + 3
                }
            }
            return found
        }

        static func word(_ t: UnsafeBufferPointer<UInt8>, _ at: Int) -> UInt32 {
            UInt32(t[at]) << 24 | UInt32(t[at + 1]) << 16 | UInt32(t[at + 2]) << 8 | UInt32(t[at + 3])
        }

        /// Whether the first `count` bytes of `needle` are at `offset` of `t`.
        static func equal(_ needle: [UInt8], _ count: Int, _ t: UnsafeBufferPointer<UInt8>, at offset: Int) -> Bool {
            guard offset >= 0, offset + count <= t.count else { return false }
            return needle.withUnsafeBufferPointer { memcmp($0.baseAddress!, t.baseAddress! + offset, count) == 0 }
        }

        /// The length of `needle` at `offset` with any of its bytes percent-encoded (`%XX`, either case) and a
        /// space possibly as `+`; nil when it is not there.
        static func percentEncoded(_ needle: [UInt8], _ t: UnsafeBufferPointer<UInt8>, at offset: Int) -> Int? {
            var j = offset
            for byte in needle {
                guard j < t.count else { return nil }
                let c = t[j]
                if c == 0x25, j + 2 < t.count, let high = hex(t[j + 1]), let low = hex(t[j + 2]), high << 4 | low == byte {
                    j += 3
                } else if c == byte || (byte == 0x20 && c == 0x2B) {
                    j += 1
                } else {
                    return nil
                }
            }
            return j - offset
        }

        static func hex(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x41...0x46: c - 0x41 + 10
            case 0x61...0x66: c - 0x61 + 10
            default: nil
            }
        }
    }
}

extension Redactor {
    /// The forms a secret can take in text that reaches syncgate from elsewhere: as written, JSON-escaped (once,
    /// as a body; twice, as a body quoted inside a JSON error), HTML-escaped, percent-encoded, base64.
    struct Encodings {
        /// Every form to scrub.
        var all: [String] = []
        /// The textual forms (not base64), whose leading fragment is also scrubbed before a cut mark.
        var textual: [String] = []
        /// The forms also matched percent-encoded, whatever characters the encoder left as they were.
        var percentDecoded: [String] = []

        enum UnicodeEscape: CaseIterable { case none, lower, upper }

        init(_ secret: String) {
            var textual: [String] = [secret]
            // JSON string content: minimal escapes (JSONText, most encoders), `\/` (Foundation's
            // JSONSerialization), non-ASCII as \uXXXX in either case (Python's ensure_ascii, Go's HTML-safe forms).
            var once: [String] = []
            for slash in [false, true] {
                for unicode in UnicodeEscape.allCases { once.append(Encodings.json(secret, slash: slash, unicode: unicode)) }
            }
            var twice: [String] = []
            for form in once {
                for slash in [false, true] {
                    for unicode in UnicodeEscape.allCases { twice.append(Encodings.json(form, slash: slash, unicode: unicode)) }
                }
            }
            textual += once + twice
            for form in [secret] + once { textual += Encodings.html(form) }
            let bases = Encodings.unique([secret] + once)
            var binary: [String] = []
            for form in bases { binary += Encodings.base64(form) }
            percentDecoded = Encodings.unique(bases + binary)
            self.textual = Encodings.unique(textual)
            self.all = Encodings.unique(textual + binary)
        }

        static func unique(_ list: [String]) -> [String] {
            var seen = Set<String>()
            return list.filter { !$0.isEmpty && seen.insert($0).inserted }
        }

        /// The content of a JSON string literal for `text`.
        static func json(_ text: String, slash: Bool, unicode: UnicodeEscape) -> String {
            var out = ""
            func escape(_ value: UInt32) {
                for unit in String(UnicodeScalar(value)!).utf16 {
                    let hex = String(unit, radix: 16, uppercase: unicode == .upper)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                }
            }
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "/": out += slash ? "\\/" : "/"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case "\u{08}": out += "\\b"
                case "\u{0C}": out += "\\f"
                default:
                    if scalar.value < 0x20 {
                        let hex = String(scalar.value, radix: 16, uppercase: unicode == .upper)
                        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                    } else if scalar.value > 0x7F && unicode != .none {
                        escape(scalar.value)
                    } else {
                        out.unicodeScalars.append(scalar)
                    }
                }
            }
            return out
        }

        /// `text` as HTML text, with the usual spellings of the quote entities.
        static func html(_ text: String) -> [String] {
            [("&quot;", "&#x27;"), ("&quot;", "&#39;"), ("&#34;", "&#39;")].map { quote, apostrophe in
                var out = ""
                for character in text {
                    switch character {
                    case "&": out += "&amp;"
                    case "<": out += "&lt;"
                    case ">": out += "&gt;"
                    case "\"": out += quote
                    case "'": out += apostrophe
                    default: out.append(character)
                    }
                }
                return out
            }
        }

        /// `text`'s UTF-8 in base64 and base64url: whole (with and without padding), and the characters that
        /// stay the same wherever the bytes sit inside a longer encoded text (three alignments).
        static func base64(_ text: String) -> [String] {
            let bytes = Array(text.utf8)
            var forms: [String] = []
            for urlSafe in [false, true] {
                func encode(_ data: [UInt8]) -> String {
                    let standard = Data(data).base64EncodedString()
                    return urlSafe ? standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_") : standard
                }
                let whole = encode(bytes)
                forms.append(whole)
                forms.append(String(whole.prefix { $0 != "=" }))
                for offset in 0..<3 {
                    // Characters whose 6 bits all come from the secret's bytes.
                    let first = (8 * offset + 5) / 6
                    let end = (8 * (offset + bytes.count)) / 6
                    guard end - first >= 8 else { continue }
                    let encoded = Array(encode([UInt8](repeating: 0, count: offset) + bytes + [0, 0]))
                    forms.append(String(encoded[first..<end]))
                }
            }
            return forms
        }
    }
}
