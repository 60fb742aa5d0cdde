/// Keeps text from being read as a formula where Sheets parses what it is sent (`value_input: USER_ENTERED`, and
/// an Apps Script's `setValues`): the OWASP CSV-injection rule. A text cell starting with `=`, `+`, `-`, `@`, a
/// tab or a carriage return is sent with a leading apostrophe, which makes Sheets store it as text (the apostrophe
/// is not kept). A text starting with an apostrophe gets one more, so that its own apostrophe is kept.
///
/// A plain negative number (`-5`, `-0.25`, `-1e3`) is not a formula: it is sent as it is, and Sheets stores a
/// number, as it does for `5`. A JSON number or boolean is never guarded (Sheets does not parse those).
public struct FormulaGuard: Sendable, Hashable {
    /// Whether cells are guarded at all (`USER_ENTERED` or Apps Script, and `formulas: text`).
    public var active: Bool

    public init(active: Bool) { self.active = active }

    /// The characters that make Sheets read a text as a formula (or would lose the leading apostrophe).
    static let triggers: Set<Character> = ["=", "+", "-", "@", "\t", "\r", "'", "\r\n"]

    public func cell(_ cell: Cell) -> Cell {
        guard active, case .string(let text) = cell else { return cell }
        return .string(FormulaGuard.text(text))
    }

    /// `text` as it must be sent so that Sheets stores it as that text.
    public static func text(_ text: String) -> String {
        guard let first = text.first, triggers.contains(first) else { return text }
        if first == "-" && isPlainNumber(text.dropFirst()) { return text }
        return "'" + text
    }

    /// Digits with at most one decimal point and an optional exponent: `5`, `0.25`, `.5`, `1e3`, `2.5E-4`.
    static func isPlainNumber(_ text: Substring) -> Bool {
        var digits = 0
        var sawPoint = false
        var index = text.startIndex
        while index < text.endIndex {
            let c = text[index]
            if c.isASCII && c.isNumber {
                digits += 1
            } else if c == "." && !sawPoint {
                sawPoint = true
            } else {
                break
            }
            index = text.index(after: index)
        }
        guard digits > 0 else { return false }
        if index == text.endIndex { return true }
        guard text[index] == "e" || text[index] == "E" else { return false }
        index = text.index(after: index)
        if index < text.endIndex, text[index] == "+" || text[index] == "-" { index = text.index(after: index) }
        guard index < text.endIndex else { return false }
        return text[index...].allSatisfy { $0.isASCII && $0.isNumber }
    }
}
