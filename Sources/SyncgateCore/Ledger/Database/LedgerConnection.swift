/// Statements run inside one ledger read or write (see ``LedgerDatabase``). SQL is written once for both engines:
/// `?` placeholders (numbered `$1...` for PostgreSQL), and ``SQLDialect`` for the few words that differ.
protocol LedgerConnection {
    var dialect: SQLDialect { get }
    /// Runs a statement; returns how many rows it changed.
    @discardableResult
    func execute(_ sql: String, _ arguments: [any LedgerBindable]) throws -> Int
    /// Runs a statement whose text changes from call to call (a list of `?` of varying length): not kept prepared.
    @discardableResult
    func executeOnce(_ sql: String, _ arguments: [any LedgerBindable]) throws -> Int
    func fetchAll(_ sql: String, _ arguments: [any LedgerBindable]) throws -> [LedgerRow]
    /// Hands the rows of a query to `body` one at a time, in the query's order.
    func forEachRow(_ sql: String, _ arguments: [any LedgerBindable], _ body: (LedgerRow) throws -> Void) throws
    /// The rows of `files` that `condition` selects (all when nil), `columns` first `source, path, destination`, in
    /// the order of the primary key, as a cursor.
    func keyOrderedFiles(columns: String, condition: String?, _ arguments: [any LedgerBindable]) throws -> any LedgerCursor
}

extension LedgerConnection {
    func fetchOne(_ sql: String, _ arguments: [any LedgerBindable]) throws -> LedgerRow? {
        var first: LedgerRow?
        try forEachRow(sql, arguments) { row in if first == nil { first = row.copy() } }
        return first
    }
}
