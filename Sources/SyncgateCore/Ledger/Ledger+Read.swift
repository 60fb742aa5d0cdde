import Foundation

extension Ledger {
    // MARK: - Reading

    /// All rows (of one destination when given), ordered by destination, source and path; with `statuses`, only
    /// rows of files still in their source.
    public func entries(destination: String? = nil, statuses: Set<FileStatus>? = nil) async throws -> [LedgerEntry] {
        try await offThread { [self] in try blockingEntries(destination: destination, statuses: statuses) }
    }

    /// ``entries(destination:statuses:)`` on the calling thread (see ``blockingRead(_:)``).
    func blockingEntries(destination: String? = nil, statuses: Set<FileStatus>? = nil) throws -> [LedgerEntry] {
        try blockingRead { db in
            var sql = "SELECT \(Ledger.columns) FROM files"
            var clauses: [String] = []
            var arguments: [any LedgerBindable] = []
            if let destination {
                clauses.append("destination = ?")
                arguments.append(destination)
            }
            if let statuses {
                clauses.append("status IN (\(statuses.map(\.rawValue).sorted().map { "'\($0)'" }.joined(separator: ",")))")
                clauses.append("removed IS NULL")  // files gone from their source are not waiting for anything
            }
            if !clauses.isEmpty { sql += " WHERE " + clauses.joined(separator: " AND ") }
            sql += " ORDER BY destination, source, path"
            var result: [LedgerEntry] = []
            try db.forEachRow(sql, arguments) { row in result.append(Ledger.entry(row)) }
            return result
        }
    }

    /// Walks the rows (of one destination when given) in the order of the primary key (source, path,
    /// destination), the byte order of a scan, one row at a time: a sync's plan reads them side by side with the
    /// scanned files and keeps none it does not act on; a file's rows at its destinations come one after another.
    /// Receipts are neither read nor decoded.
    public func withRows<T>(destination: String? = nil, _ body: (LedgerRowStream) throws -> T) throws -> T {
        // SQLite: `+destination`, filter, do not look up by it, so that the primary key gives the order without a sort.
        try withRows(where: destination == nil ? nil : { "\($0.unindexed("destination")) = ?" }, destination.map { [$0] } ?? [], body)
    }

    /// Walks one source's rows whose path comes after `path` (all of them when nil), in the order of
    /// ``withRows(destination:_:)``. A sync reads its plan in waves, a short read transaction each, so that the rows
    /// it writes meanwhile never wait for a long-lived reader to let the write-ahead log go.
    public func withRows<T>(source: String, after path: String?, _ body: (LedgerRowStream) throws -> T) throws -> T {
        try withRows(where: { _ in "source = ?" + (path == nil ? "" : " AND path > ?") }, [source] + (path.map { [$0] } ?? []), body)
    }

    /// The rows of some files of one source (`paths` in any order, at most a few hundred), as a stream in the
    /// order of ``withRows(destination:_:)``: a gateway's pass reads the rows of the files its watches saw in one
    /// statement per batch, not one round trip per file.
    public func withRows<T>(source: String, paths: [String], _ body: (LedgerRowStream) throws -> T) throws -> T {
        let marks = paths.isEmpty ? "NULL" : Array(repeating: "?", count: paths.count).joined(separator: ", ")
        return try withRows(where: { _ in "source = ? AND path IN (\(marks))" }, [source] + paths, body)
    }

    /// The rows `condition` selects, in primary key order, as a stream read inside one read.
    func withRows<T>(where condition: ((SQLDialect) -> String)?, _ arguments: [String], columns: String = Ledger.columnsWithoutReceipt,
                     _ body: (LedgerRowStream) throws -> T) throws -> T {
        try blockingRead { db in
            let stream = LedgerRowStream(try db.keyOrderedFiles(columns: columns, condition: condition?(db.dialect), arguments))
            try stream.advance()
            return try body(stream)
        }
    }

    public func entry(_ file: FileKey, destination: String) async throws -> LedgerEntry? {
        try await offThread { [self] in try blockingEntry(file, destination: destination) }
    }

    /// ``entry(_:destination:)`` on the calling thread (see ``blockingRead(_:)``).
    func blockingEntry(_ file: FileKey, destination: String) throws -> LedgerEntry? {
        try blockingRead { db in
            try db.fetchOne("SELECT \(Ledger.columns) FROM files WHERE source = ? AND path = ? AND destination = ?",
                            [file.source, file.path, destination]).map(Ledger.entry)
        }
    }

    /// Counts per destination and status, of files still in their source.
    public func counts() async throws -> [String: [FileStatus: Int]] {
        try await read { db in
            var result: [String: [FileStatus: Int]] = [:]
            for row in try db.fetchAll("SELECT destination, status, COUNT(*) AS n FROM files WHERE removed IS NULL GROUP BY destination, status", []) {
                guard let destination = row.string(0), let status = row.string(1).flatMap(FileStatus.init(rawValue:)) else { continue }
                result[destination, default: [:]][status] = row.int(2) ?? 0
            }
            return result
        }
    }

    /// The latest `synced_at` per destination.
    public func lastSuccess() async throws -> [String: Date] {
        try await read { db in
            var result: [String: Date] = [:]
            for row in try db.fetchAll("SELECT destination, MAX(synced_at) AS t FROM files WHERE synced_at IS NOT NULL GROUP BY destination", []) {
                if let destination = row.string(0), let t = row.double(1) { result[destination] = Date(timeIntervalSince1970: t) }
            }
            return result
        }
    }

    /// Rows synced since `since`, newest first (at most `limit`).
    public func recentlySynced(since: Date, limit: Int = 1000) async throws -> [LedgerEntry] {
        try await read { db in
            try db.fetchAll("SELECT \(Ledger.columns) FROM files WHERE status = \(FileStatus.synced.sql) AND synced_at >= ? ORDER BY synced_at DESC LIMIT ?",
                            [since.timeIntervalSince1970, limit]).map(Ledger.entry)
        }
    }

    /// Rows that failed with an attempt since `since`, newest first (at most `limit`).
    public func recentlyFailed(since: Date, limit: Int = 1000) async throws -> [LedgerEntry] {
        try await read { db in
            try db.fetchAll("SELECT \(Ledger.columns) FROM files WHERE status = \(FileStatus.failed.sql) AND removed IS NULL AND COALESCE(last_attempt_at, updated_at) >= ? ORDER BY COALESCE(last_attempt_at, updated_at) DESC LIMIT ?",
                            [since.timeIntervalSince1970, limit]).map(Ledger.entry)
        }
    }

    /// The rows of files with these relative paths (in any source), at every destination, in key order.
    public func entries(paths: [String]) async throws -> [LedgerEntry] {
        guard !paths.isEmpty else { return [] }
        return try await read { db in
            var result: [LedgerEntry] = []
            for path in Set(paths).sorted() {
                try db.forEachRow("SELECT \(Ledger.columns) FROM files WHERE path = ? ORDER BY source, path, destination", [path]) { row in
                    result.append(Ledger.entry(row))
                }
            }
            return result
        }
    }

    /// Every row (of one destination when given), receipt included, handed to `body` one at a time in key order:
    /// nothing is held, however many rows there are (`status --all --json`). The rows are read, and `body` runs, on
    /// the ledger's threads.
    public func forEachEntry(destination: String? = nil, _ body: @escaping @Sendable (LedgerEntry) throws -> Void) async throws {
        try await offThread { [self] in try blockingForEachEntry(destination: destination, body) }
    }

    private func blockingForEachEntry(destination: String?, _ body: (LedgerEntry) throws -> Void) throws {
        try withRows(where: destination == nil ? nil : { "\($0.unindexed("destination")) = ?" }, destination.map { [$0] } ?? [],
                     columns: Ledger.columns) { stream in
            while let entry = stream.entry() {
                try body(entry)
                try stream.advance()
            }
        }
    }
}
