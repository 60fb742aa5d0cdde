/// Names from elsewhere (files in a source, names a destination lists) as a terminal shows them: every control
/// character as a visible escape, as `ls -b` does, so that a name cannot move the cursor, rewrite the line it is on
/// (a leading CR), ring the bell or send an escape sequence. `\t`, `\n`, `\r`, `\a`, `\b`, `\f`, `\v` and `\e`
/// by their names; other C0 characters and DEL as `\xNN`; C1 controls (U+0080–U+009F) and the bidirectional
/// overrides and isolates (U+202A–U+202E, U+2066–U+2069) as `\u{NNNN}`. Printable text, non-ASCII letters included,
/// is left as it is. JSON output needs none of this: its strings are JSON-escaped.
public enum TerminalText {
    /// `text` with every control character escaped, line breaks included (one line).
    public static func escape(_ text: String) -> String {
        escape(text, keepingLines: false)
    }

    /// `text` with every control character escaped except `\n` (text of several lines, such as a report).
    public static func escapeKeepingLines(_ text: String) -> String {
        escape(text, keepingLines: true)
    }

    static func escape(_ text: String, keepingLines: Bool) -> String {
        guard text.unicodeScalars.contains(where: { needsEscape($0) && !(keepingLines && $0 == "\n") }) else { return text }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar), !(keepingLines && scalar == "\n") else {
                out.append(scalar)
                continue
            }
            let shown: String
            switch scalar.value {
            case 0x09: shown = "\\t"
            case 0x0A: shown = "\\n"
            case 0x0D: shown = "\\r"
            case 0x07: shown = "\\a"
            case 0x08: shown = "\\b"
            case 0x0C: shown = "\\f"
            case 0x0B: shown = "\\v"
            case 0x1B: shown = "\\e"
            case 0x00...0x1F, 0x7F: shown = "\\x" + hex(scalar.value, digits: 2)
            default: shown = "\\u{" + hex(scalar.value, digits: 4) + "}"
            }
            out.append(contentsOf: shown.unicodeScalars)
        }
        return String(out)
    }

    /// A file name that is not valid UTF-8 (a name from a Latin-1 system), as one that can be shown and told apart
    /// from others: its valid UTF-8 as it is, each byte that is not part of a valid sequence as `\xNN`
    /// (`bad-\xff.txt`). Decoding it with replacement characters instead would show two such names alike.
    public static func undecodable<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        let bytes = Array(bytes)
        var out = String.UnicodeScalarView()
        var start = 0
        while start < bytes.count {
            var rest = bytes[start...].makeIterator()
            var parser = Unicode.UTF8.ForwardParser()
            if case .valid(let encoded) = parser.parseScalar(from: &rest) {
                out.append(Unicode.UTF8.decode(encoded))
                start += encoded.count
            } else {  // a byte that starts no valid sequence: shown, and decoding goes on from the next one
                out.append(contentsOf: ("\\x" + hex(UInt32(bytes[start]), digits: 2)).unicodeScalars)
                start += 1
            }
        }
        return String(out)
    }

    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
