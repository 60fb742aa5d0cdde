/// What can be bound to a `?` of a ledger statement.
protocol LedgerBindable: Sendable {
    var ledgerValue: LedgerValue { get }
}

extension String: LedgerBindable { var ledgerValue: LedgerValue { .text(self) } }
extension Int: LedgerBindable { var ledgerValue: LedgerValue { .integer(Int64(self)) } }
extension Int64: LedgerBindable { var ledgerValue: LedgerValue { .integer(self) } }
extension Double: LedgerBindable { var ledgerValue: LedgerValue { .real(self) } }
extension Bool: LedgerBindable { var ledgerValue: LedgerValue { .boolean(self) } }
extension LedgerValue: LedgerBindable { var ledgerValue: LedgerValue { self } }
extension Optional: LedgerBindable where Wrapped: LedgerBindable {
    var ledgerValue: LedgerValue { self?.ledgerValue ?? .null }
}
