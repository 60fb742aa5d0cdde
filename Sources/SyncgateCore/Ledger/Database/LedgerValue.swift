/// A value bound to a ledger statement or read from a row, the same for both engines.
enum LedgerValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case boolean(Bool)
}
