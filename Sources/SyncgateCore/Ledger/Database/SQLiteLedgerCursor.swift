import GRDB

/// GRDB's row cursor as a ``LedgerCursor``.
final class SQLiteLedgerCursor: LedgerCursor {
    private let rows: RowCursor
    init(_ rows: RowCursor) { self.rows = rows }
    func next() throws -> LedgerRow? { try rows.next().map(LedgerRow.init) }
}
