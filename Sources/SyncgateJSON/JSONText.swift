/// Deterministic JSON text: ``JSONValue``s written compact, object members in their order (or keys sorted, for
/// writers whose peers' transcripts were recorded that way), numbers as their literal text, and the string escapes
/// every writer of the project shares. Also the pieces to assemble text from already-written values (Sheets'
/// request bodies and JWTs, where members keep the order given).
public enum JSONText {
    /// Compact JSON text of `value` on one line. With `sortedKeys`, every object's members are written in key order
    /// (Swift's `String` order; a stable sort, so names written twice keep their order).
    public static func compact(_ value: JSONValue, sortedKeys: Bool = false) -> String {
        var out = ""
        write(value, sortedKeys: sortedKeys, into: &out)
        return out
    }

    /// Appends the compact text of `value` to `out`.
    public static func write(_ value: JSONValue, sortedKeys: Bool = false, into out: inout String) {
        switch value {
        case .null: out += "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .number(let text): out += text
        case .string(let text): quote(text, into: &out)
        case .array(let items):
            out += "["
            for (position, item) in items.enumerated() {
                if position > 0 { out += "," }
                write(item, sortedKeys: sortedKeys, into: &out)
            }
            out += "]"
        case .object(let object):
            out += "{"
            let members = sortedKeys ? object.members.sorted { $0.name < $1.name } : object.members
            for (position, member) in members.enumerated() {
                if position > 0 { out += "," }
                quote(member.name, into: &out)
                out += ":"
                write(member.value, sortedKeys: sortedKeys, into: &out)
            }
            out += "}"
        }
    }

    /// Indented JSON text (two spaces a level, `"name" : value`, an empty container as its brackets around an empty
    /// line): the layout of the reports `syncgate status --json` prints, as Foundation's JSONSerialization wrote it.
    public static func pretty(_ value: JSONValue, sortedKeys: Bool = false) -> String {
        var out = ""
        writePretty(value, sortedKeys: sortedKeys, indent: 0, into: &out)
        return out
    }

    private static func writePretty(_ value: JSONValue, sortedKeys: Bool, indent: Int, into out: inout String) {
        let inner = String(repeating: " ", count: (indent + 1) * 2)
        switch value {
        case .array(let items):
            out += "[\n"
            for (position, item) in items.enumerated() {
                if position > 0 { out += ",\n" }
                out += inner
                writePretty(item, sortedKeys: sortedKeys, indent: indent + 1, into: &out)
            }
            out += "\n" + String(repeating: " ", count: indent * 2) + "]"
        case .object(let object):
            out += "{\n"
            let members = sortedKeys ? object.members.sorted { $0.name < $1.name } : object.members
            for (position, member) in members.enumerated() {
                if position > 0 { out += ",\n" }
                out += inner
                quote(member.name, into: &out)
                out += " : "
                writePretty(member.value, sortedKeys: sortedKeys, indent: indent + 1, into: &out)
            }
            out += "\n" + String(repeating: " ", count: indent * 2) + "}"
        default:
            write(value, into: &out)
        }
    }

    /// A JSON string literal for `text`: `"` and `\` escaped, `\b \f \n \r \t` in their short forms, the other
    /// control characters, U+2028 and U+2029 as `\u` escapes (lowercase hex); `/`, DEL and everything else as
    /// UTF-8. (Sheets' row hashes are made of this text: it must not change.)
    public static func string(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count + 2)
        quote(text, into: &out)
        return out
    }

    /// Appends the string literal for `text` to `out` (see ``string(_:)``).
    public static func quote(_ text: String, into out: inout String) {
        out += "\""
        // Most strings need no escape: one pass over the bytes tells (0xE2 starts U+2028 and U+2029, among others).
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C || $0 == 0xE2 }) {
            out += text
            out += "\""
            return
        }
        let scalars = text.unicodeScalars
        var plainStart = scalars.startIndex
        var index = scalars.startIndex
        while index < scalars.endIndex {
            if let escape = escape(scalars[index]) {
                out.unicodeScalars.append(contentsOf: scalars[plainStart..<index])
                out += escape
                plainStart = scalars.index(after: index)
            }
            index = scalars.index(after: index)
        }
        out.unicodeScalars.append(contentsOf: scalars[plainStart..<scalars.endIndex])
        out += "\""
    }

    private static func escape(_ scalar: Unicode.Scalar) -> String? {
        switch scalar {
        case "\"": return "\\\""
        case "\\": return "\\\\"
        case "\n": return "\\n"
        case "\r": return "\\r"
        case "\t": return "\\t"
        case "\u{08}": return "\\b"
        case "\u{0C}": return "\\f"
        case "\u{2028}": return "\\u2028"
        case "\u{2029}": return "\\u2029"
        default:
            guard scalar.value < 0x20 else { return nil }
            let hex = String(scalar.value, radix: 16)
            return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
    }

    /// `{"name":value,...}` from names and already-written values, in the order given.
    public static func object(_ members: [(String, String)]) -> String {
        var out = "{"
        for (position, member) in members.enumerated() {
            if position > 0 { out += "," }
            quote(member.0, into: &out)
            out += ":"
            out += member.1
        }
        return out + "}"
    }

    /// `[value,...]` from already-written values.
    public static func array(_ elements: [String]) -> String {
        "[" + elements.joined(separator: ",") + "]"
    }
}
