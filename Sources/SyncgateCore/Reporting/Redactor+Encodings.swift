import Foundation

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
