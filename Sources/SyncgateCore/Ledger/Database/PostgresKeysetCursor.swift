/// Rows of `files` in key order, read from PostgreSQL a page at a time, each page the rows after the last one
/// read (keyset pagination on the primary key): no long-lived cursor or transaction holds the server while the
/// reader walks its folders.
final class PostgresKeysetCursor: LedgerCursor {
    private let connection: PostgresLedgerConnection
    private let columns: String
    private let condition: String?
    private let arguments: [any LedgerBindable]
    private var page: [LedgerRow] = []
    private var index = 0
    private var lastKey: (String, String, String)?
    private var done = false

    init(connection: PostgresLedgerConnection, columns: String, condition: String?, arguments: [any LedgerBindable]) {
        self.connection = connection
        self.columns = columns
        self.condition = condition
        self.arguments = arguments
    }

    func next() throws -> LedgerRow? {
        if index == page.count {
            guard !done else { return nil }
            page = try connection.page(columns: columns, condition: condition, arguments, after: lastKey)
            index = 0
            done = page.count < PostgresLedgerConnection.pageSize
            guard let last = page.last else { return nil }
            lastKey = (last.string(0) ?? "", last.string(1) ?? "", last.string(2) ?? "")
        }
        defer { index += 1 }
        return page[index]
    }
}
