import SyncgateJSON

/// One cell value sent to Sheets: the Sheets API accepts strings, numbers and booleans (`ValueRange.values`).
public enum Cell: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    /// A JSON number kept as its literal text (no reformatting through Double).
    case number(String)
    case bool(Bool)

    /// The cell as JSON text.
    var json: String {
        switch self {
        case .string(let s): JSONText.string(s)
        case .number(let n): n
        case .bool(let b): b ? "true" : "false"
        }
    }

    /// The text a key comparison uses (what Sheets shows for it).
    public var text: String {
        switch self {
        case .string(let s): s
        case .number(let n): n
        case .bool(let b): b ? "TRUE" : "FALSE"
        }
    }

    public var description: String { text }
}
