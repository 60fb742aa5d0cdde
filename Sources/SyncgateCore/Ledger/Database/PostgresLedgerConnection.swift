import Foundation
import Logging
import NIOCore
import PostgresNIO

/// The statements of one PostgreSQL read or write, on one connection: `?` numbered `$1...`, values bound as
/// `text`, `int8`, `float8` or `bool`, answers decoded to ``LedgerValue``s.
struct PostgresLedgerConnection: LedgerConnection {
    let connection: PostgresConnection
    let database: PostgresLedgerDatabase
    let logger: Logger
    var dialect: SQLDialect { .postgres }

    /// Rows a page of ``keyOrderedFiles(columns:condition:_:)`` reads.
    static let pageSize = 1000

    private func run(_ sql: String, _ arguments: [any LedgerBindable]) throws -> PostgresQueryResult {
        var binds = PostgresBindings(capacity: arguments.count)
        for argument in arguments {
            switch argument.ledgerValue {
            case .null: binds.appendNull()
            case .integer(let n): binds.append(n)
            case .real(let x): binds.append(x)
            case .text(let text): binds.append(text)
            case .boolean(let b): binds.append(b)
            }
        }
        let query = PostgresQuery(unsafeSQL: PostgresPlaceholders.numbered(sql), binds: binds)
        do {
            return try database.deadlines.run(query, on: connection, logger: logger)
        } catch {
            throw database.explain(error)
        }
    }

    @discardableResult
    func execute(_ sql: String, _ arguments: [any LedgerBindable]) throws -> Int {
        try run(sql, arguments).metadata.rows ?? 0
    }

    @discardableResult
    func executeOnce(_ sql: String, _ arguments: [any LedgerBindable]) throws -> Int {
        try execute(sql, arguments)
    }

    func fetchAll(_ sql: String, _ arguments: [any LedgerBindable]) throws -> [LedgerRow] {
        try run(sql, arguments).rows.map(PostgresLedgerConnection.decode)
    }

    func forEachRow(_ sql: String, _ arguments: [any LedgerBindable], _ body: (LedgerRow) throws -> Void) throws {
        for row in try run(sql, arguments).rows { try body(PostgresLedgerConnection.decode(row)) }
    }

    func keyOrderedFiles(columns: String, condition: String?, _ arguments: [any LedgerBindable]) throws -> any LedgerCursor {
        PostgresKeysetCursor(connection: self, columns: columns, condition: condition, arguments: arguments)
    }

    /// One page of `files` in key order after `key` (from the start when nil).
    func page(columns: String, condition: String?, _ arguments: [any LedgerBindable], after key: (String, String, String)?) throws -> [LedgerRow] {
        var clauses: [String] = []
        var values = arguments
        if let condition { clauses.append("(\(condition))") }
        if let key {
            clauses.append("(source, path, destination) > (?, ?, ?)")
            values += [key.0, key.1, key.2]
        }
        let filter = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ") + " "
        return try fetchAll("SELECT \(columns) FROM files \(filter)ORDER BY source, path, destination LIMIT \(PostgresLedgerConnection.pageSize)", values)
    }

    static func decode(_ row: PostgresRow) -> LedgerRow {
        var values: [LedgerValue] = []
        values.reserveCapacity(row.count)
        for cell in row {
            guard cell.bytes != nil else {
                values.append(.null)
                continue
            }
            switch cell.dataType {
            case .int2, .int4, .int8: values.append((try? cell.decode(Int64.self)).map(LedgerValue.integer) ?? .null)
            case .float4, .float8: values.append((try? cell.decode(Double.self)).map(LedgerValue.real) ?? .null)
            case .bool: values.append((try? cell.decode(Bool.self)).map(LedgerValue.boolean) ?? .null)
            default: values.append((try? cell.decode(String.self)).map(LedgerValue.text) ?? .null)
            }
        }
        return LedgerRow(values: values)
    }
}
