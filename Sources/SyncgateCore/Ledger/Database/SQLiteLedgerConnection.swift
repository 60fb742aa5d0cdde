import GRDB

/// The statements of one SQLite read or write, on GRDB's connection.
struct SQLiteLedgerConnection: LedgerConnection {
    let db: Database
    var dialect: SQLDialect { .sqlite }

    private static func arguments(_ values: [any LedgerBindable]) -> StatementArguments {
        StatementArguments(values.map { value -> DatabaseValue in
            switch value.ledgerValue {
            case .null: return .null
            case .integer(let n): return n.databaseValue
            case .real(let x): return x.databaseValue
            case .text(let text): return text.databaseValue
            case .boolean(let b): return b.databaseValue
            }
        })
    }

    @discardableResult
    func execute(_ sql: String, _ arguments: [any LedgerBindable]) throws -> Int {
        try db.cachedStatement(sql: sql).execute(arguments: Self.arguments(arguments))
        return db.changesCount
    }

    @discardableResult
    func executeOnce(_ sql: String, _ arguments: [any LedgerBindable]) throws -> Int {
        try db.execute(sql: sql, arguments: Self.arguments(arguments))
        return db.changesCount
    }

    func fetchAll(_ sql: String, _ arguments: [any LedgerBindable]) throws -> [LedgerRow] {
        try Row.fetchAll(db.cachedStatement(sql: sql), arguments: Self.arguments(arguments)).map(LedgerRow.init)
    }

    func forEachRow(_ sql: String, _ arguments: [any LedgerBindable], _ body: (LedgerRow) throws -> Void) throws {
        // A cursor: rows are decoded one at a time, never all held as SQLite rows at once.
        let rows = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: Self.arguments(arguments))
        while let row = try rows.next() { try body(LedgerRow(row)) }
    }

    func keyOrderedFiles(columns: String, condition: String?, _ arguments: [any LedgerBindable]) throws -> any LedgerCursor {
        let sql = "SELECT \(columns) FROM files \(condition.map { "WHERE \($0) " } ?? "")ORDER BY source, path, destination"
        return SQLiteLedgerCursor(try Row.fetchCursor(db, sql: sql, arguments: Self.arguments(arguments)))
    }
}
