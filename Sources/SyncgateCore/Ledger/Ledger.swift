import Foundation
import GRDB

/// The state ledger: one row per (source file, destination) in SQLite (WAL), written before any upload starts and
/// after every step, so that a crash at any moment leaves a state the next run resumes from. Readable by
/// `syncgate status` from another process while a sync runs.
public final class Ledger: Sendable {
    public let path: String
    let pool: DatabasePool

    static let format = "syncgate-ledger"
    static let schemaVersion = "1"

    /// Opens (creating if needed) the ledger at `path`. A file that is not SQLite, is damaged, or belongs to another
    /// program is reported, never replaced.
    public init(path: String) throws {
        self.path = path
        let folder = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw LedgerError(path: path, message: "cannot create its folder: \(error.localizedDescription)")
        }
        let existed = FileManager.default.fileExists(atPath: path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.label = "syncgate-ledger"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
        } catch let error as DatabaseError {
            throw Ledger.explain(error, path: path)
        }
        do {
            try pool.write { db in try Ledger.checkOrCreateSchema(db, existed: existed, path: path) }
        } catch let error as DatabaseError {
            throw Ledger.explain(error, path: path)
        }
    }

    private static func explain(_ error: DatabaseError, path: String) -> LedgerError {
        switch error.resultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT:
            return LedgerError(path: path, message: "is damaged or not a syncgate state file (\(error.message ?? "\(error.resultCode)")); move it aside to start afresh, or restore it from a backup")
        case .SQLITE_FULL:
            return LedgerError(path: path, message: "the disk is full; nothing was lost, free some space and run again")
        case .SQLITE_READONLY, .SQLITE_PERM, .SQLITE_CANTOPEN:
            return LedgerError(path: path, message: "cannot be written (\(error.message ?? "\(error.resultCode)"))")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return LedgerError(path: path, message: "is busy (another syncgate holds it)")
        default:
            return LedgerError(path: path, message: error.message ?? "\(error)")
        }
    }

    private static func checkOrCreateSchema(_ db: Database, existed: Bool, path: String) throws {
        let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
        if tables.contains("syncgate_meta") {
            let format = try String.fetchOne(db, sql: "SELECT value FROM syncgate_meta WHERE key = 'format'")
            let schema = try String.fetchOne(db, sql: "SELECT value FROM syncgate_meta WHERE key = 'schema'")
            guard format == Ledger.format else { throw LedgerError(path: path, message: "is not a syncgate state file") }
            guard schema == Ledger.schemaVersion else {
                throw LedgerError(path: path, message: "was written by another version of syncgate (schema \(schema ?? "?"), this one reads \(Ledger.schemaVersion))")
            }
            return
        }
        if !tables.isEmpty {
            throw LedgerError(path: path, message: "is an SQLite database of another program (tables: \(tables.prefix(5).joined(separator: ", "))); it was left untouched")
        }
        try db.execute(sql: """
            CREATE TABLE syncgate_meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
            INSERT INTO syncgate_meta (key, value) VALUES ('format', '\(Ledger.format)'), ('schema', '\(Ledger.schemaVersion)');
            CREATE TABLE files (
                source TEXT NOT NULL,
                path TEXT NOT NULL,
                destination TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('pending', 'uploading', 'synced', 'failed')),
                attempts INTEGER NOT NULL DEFAULT 0,
                last_attempt_at REAL,
                last_error TEXT,
                error_class TEXT,
                error_code TEXT,
                next_retry_at REAL,
                failed_runs INTEGER NOT NULL DEFAULT 0,
                first_failed_at REAL,
                size INTEGER NOT NULL,
                mtime REAL NOT NULL,
                sha256 TEXT,
                receipt TEXT,
                bytes_done INTEGER NOT NULL DEFAULT 0,
                queued_at REAL,
                synced_at REAL,
                updated_at REAL NOT NULL,
                PRIMARY KEY (source, path, destination)
            ) WITHOUT ROWID;
            CREATE INDEX files_by_destination_status ON files (destination, status);
            """)
    }

    // MARK: - Reading

    /// All rows (of one destination when given), ordered by destination, source and path.
    public func entries(destination: String? = nil, statuses: Set<FileStatus>? = nil) throws -> [LedgerEntry] {
        try read { db in
            var sql = "SELECT \(Ledger.columns) FROM files"
            var clauses: [String] = []
            var arguments: [any DatabaseValueConvertible] = []
            if let destination {
                clauses.append("destination = ?")
                arguments.append(destination)
            }
            if let statuses {
                clauses.append("status IN (\(statuses.map { "'\($0.rawValue)'" }.joined(separator: ",")))")
            }
            if !clauses.isEmpty { sql += " WHERE " + clauses.joined(separator: " AND ") }
            sql += " ORDER BY destination, source, path"
            // A cursor: rows are decoded one at a time, never all held as SQLite rows at once.
            var result: [LedgerEntry] = []
            let rows = try Row.fetchCursor(db, sql: sql, arguments: StatementArguments(arguments))
            while let row = try rows.next() { result.append(Ledger.entry(row)) }
            return result
        }
    }

    /// Walks the rows (of one destination when given) in the order of the primary key (source, path,
    /// destination), the byte order of a scan, one row at a time: a sync's plan reads them side by side with the
    /// scanned files and keeps none it does not act on; a file's rows at its destinations come one after another.
    /// Receipts are neither read nor decoded (see ``receipts(_:destination:)``).
    public func withRows<T>(destination: String? = nil, _ body: (LedgerRowStream) throws -> T) throws -> T {
        // `+destination`: filter, do not look up by it, so that the primary key gives the order without a sort.
        try withRows(where: destination == nil ? "" : "WHERE +destination = ?", destination.map { [$0] } ?? [], body)
    }

    /// Walks one source's rows whose path comes after `path` (all of them when nil), in the order of
    /// ``withRows(destination:_:)``. A sync reads its plan in waves, a short read transaction each, so that the rows
    /// it writes meanwhile never wait for a long-lived reader to let the write-ahead log go.
    public func withRows<T>(source: String, after path: String?, _ body: (LedgerRowStream) throws -> T) throws -> T {
        try withRows(where: "WHERE source = ?" + (path == nil ? "" : " AND path > ?"), [source] + (path.map { [$0] } ?? []), body)
    }

    /// The rows `filter` selects, in primary key order, as a stream read inside one read transaction.
    private func withRows<T>(where filter: String, _ arguments: [String], _ body: (LedgerRowStream) throws -> T) throws -> T {
        try read { db in
            let rows = try Row.fetchCursor(
                db, sql: "SELECT \(Ledger.columnsWithoutReceipt) FROM files \(filter) ORDER BY source, path, destination",
                arguments: StatementArguments(arguments))
            let stream = LedgerRowStream(rows)
            try stream.advance()
            return try body(stream)
        }
    }

    /// The receipts of these files' last deliveries to a destination (files without one are left out), read in
    /// one transaction.
    public func receipts(_ files: [FileKey], destination: String) throws -> [FileKey: Receipt] {
        guard !files.isEmpty else { return [:] }
        let texts = try read { db in
            let statement = try db.cachedStatement(sql: "SELECT receipt FROM files WHERE source = ? AND path = ? AND destination = ?")
            var found: [(FileKey, String)] = []
            for file in files {
                if let text = try String.fetchOne(statement, arguments: [file.source, file.path, destination]) { found.append((file, text)) }
            }
            return found
        }
        let decoder = JSONDecoder()
        var result: [FileKey: Receipt] = [:]
        for (file, text) in texts {
            if let receipt = try? decoder.decode(Receipt.self, from: Data(text.utf8)) { result[file] = receipt }
        }
        return result
    }

    public func entry(_ file: FileKey, destination: String) throws -> LedgerEntry? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT \(Ledger.columns) FROM files WHERE source = ? AND path = ? AND destination = ?",
                             arguments: [file.source, file.path, destination]).map(Ledger.entry)
        }
    }

    /// Counts per destination and status.
    public func counts() throws -> [String: [FileStatus: Int]] {
        try read { db in
            var result: [String: [FileStatus: Int]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT destination, status, COUNT(*) AS n FROM files GROUP BY destination, status") {
                let destination: String = row["destination"]
                guard let status = FileStatus(rawValue: row["status"]) else { continue }
                result[destination, default: [:]][status] = row["n"]
            }
            return result
        }
    }

    /// The latest `synced_at` per destination.
    public func lastSuccess() throws -> [String: Date] {
        try read { db in
            var result: [String: Date] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT destination, MAX(synced_at) AS t FROM files WHERE synced_at IS NOT NULL GROUP BY destination") {
                if let t: Double = row["t"] { result[row["destination"]] = Date(timeIntervalSince1970: t) }
            }
            return result
        }
    }

    /// Rows synced since `since`, newest first (at most `limit`).
    public func recentlySynced(since: Date, limit: Int = 1000) throws -> [LedgerEntry] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT \(Ledger.columns) FROM files WHERE status = 'synced' AND synced_at >= ? ORDER BY synced_at DESC LIMIT ?",
                             arguments: [since.timeIntervalSince1970, limit]).map(Ledger.entry)
        }
    }

    /// Rows that failed with an attempt since `since`, newest first (at most `limit`).
    public func recentlyFailed(since: Date, limit: Int = 1000) throws -> [LedgerEntry] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT \(Ledger.columns) FROM files WHERE status = 'failed' AND COALESCE(last_attempt_at, updated_at) >= ? ORDER BY COALESCE(last_attempt_at, updated_at) DESC LIMIT ?",
                             arguments: [since.timeIntervalSince1970, limit]).map(Ledger.entry)
        }
    }

    // MARK: - Writing

    /// A row to record as pending before its upload starts.
    public struct Pending: Sendable {
        public var file: FileKey
        public var destination: String
        public var size: Int64
        public var modificationTime: Date
        public var sha256: String?
        /// The content changed since the last record: failure history starts afresh.
        public var contentChanged: Bool
        public init(file: FileKey, destination: String, size: Int64, modificationTime: Date, sha256: String?, contentChanged: Bool) {
            self.file = file
            self.destination = destination
            self.size = size
            self.modificationTime = modificationTime
            self.sha256 = sha256
            self.contentChanged = contentChanged
        }
    }

    /// Records files as `pending` in one transaction (before any of them is uploaded).
    public func recordPending(_ rows: [Pending], at now: Date) throws {
        try write { db in
            let statement = try db.cachedStatement(sql: """
                INSERT INTO files (source, path, destination, status, size, mtime, sha256, queued_at, updated_at)
                VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?)
                ON CONFLICT (source, path, destination) DO UPDATE SET
                    status = 'pending', size = excluded.size, mtime = excluded.mtime, sha256 = excluded.sha256,
                    queued_at = excluded.queued_at, updated_at = excluded.updated_at, bytes_done = 0,
                    failed_runs = CASE WHEN ? THEN 0 ELSE failed_runs END,
                    first_failed_at = CASE WHEN ? THEN NULL ELSE first_failed_at END
                """)
            let t = now.timeIntervalSince1970
            for row in rows {
                try statement.execute(arguments: [
                    row.file.source, row.file.path, row.destination, row.size, row.modificationTime.timeIntervalSince1970,
                    row.sha256, t, t, row.contentChanged, row.contentChanged,
                ])
            }
        }
    }

    /// Updates metadata of a synced row whose file was touched but holds the same bytes.
    public func refreshMetadata(_ file: FileKey, destination: String, size: Int64, modificationTime: Date, at now: Date) throws {
        try write { db in
            try db.execute(sql: "UPDATE files SET size = ?, mtime = ?, updated_at = ? WHERE source = ? AND path = ? AND destination = ?",
                           arguments: [size, modificationTime.timeIntervalSince1970, now.timeIntervalSince1970, file.source, file.path, destination])
        }
    }

    /// One change to a row, applied with others in one transaction by ``apply(_:)``.
    public enum Update: Sendable {
        /// An attempt starts: `attempts + 1`. Durable before the upload begins where a resend could duplicate
        /// (see ``Destination/resendIsHarmless``).
        case uploading(FileKey, destination: String, at: Date)
        case progress(FileKey, destination: String, bytes: Int64)
        /// A failed attempt that will be retried in this run: keep the error visible while waiting.
        case retryNote(FileKey, destination: String, error: String, at: Date)
        case synced(FileKey, destination: String, receipt: Receipt, size: Int64, modificationTime: Date, sha256: String?, at: Date)
        /// A failure that ends this run's attempts (see ``markFailed(_:destination:failure:retry:at:)``).
        case failed(FileKey, destination: String, failure: DeliveryFailure, retry: RetrySettings, at: Date)
        /// A run stopped before this file's upload ended: it is pending again.
        case interrupted(FileKey, destination: String, at: Date)

        /// Whether this change records a file synced (the destination's copy must be durable first).
        public var recordsSynced: Bool {
            if case .synced = self { return true }
            return false
        }
    }

    /// Applies updates in one transaction, with the effect of applying them one by one in order.
    ///
    /// An attempt's start directly followed by that file's success (the usual pair in a batch) is written as one
    /// row change: the synced row with the attempt counted. Each row change costs SQLite a primary-key search and
    /// an index update, which is most of a small file's delivery cost.
    public func apply(_ updates: [Update]) throws {
        guard !updates.isEmpty else { return }
        let changes = Ledger.foldingAttemptStarts(updates)
        try write { db in
            for change in changes { try Ledger.apply(change.update, in: db, attemptStartedAt: change.attemptStartedAt) }
        }
    }

    /// The updates in order, each `.uploading` that is followed, for the same row, directly by `.synced` left out
    /// and its start time handed to that `.synced`.
    static func foldingAttemptStarts(_ updates: [Update]) -> [(update: Update, attemptStartedAt: Date?)] {
        struct Row: Hashable {
            let file: FileKey
            let destination: String
        }
        var changes: [(update: Update, attemptStartedAt: Date?)?] = []
        changes.reserveCapacity(updates.count)
        var openAttempt: [Row: Int] = [:]  // the index in `changes` of a row's start not yet followed by anything
        for update in updates {
            var startedAt: Date? = nil
            switch update {
            case .uploading(let file, let destination, _):
                openAttempt[Row(file: file, destination: destination)] = changes.count
            case .synced(let file, let destination, _, _, _, _, _):
                if let open = openAttempt.removeValue(forKey: Row(file: file, destination: destination)),
                   case .uploading(_, _, let at)? = changes[open]?.update {
                    startedAt = at
                    changes[open] = nil
                }
            case .progress(let file, let destination, _), .retryNote(let file, let destination, _, _),
                .failed(let file, let destination, _, _, _), .interrupted(let file, let destination, _):
                openAttempt[Row(file: file, destination: destination)] = nil
            }
            changes.append((update, startedAt))
        }
        return changes.compactMap { $0 }
    }

    public func markUploading(_ file: FileKey, destination: String, at now: Date) throws {
        try apply([.uploading(file, destination: destination, at: now)])
    }

    public func markProgress(_ file: FileKey, destination: String, bytes: Int64) throws {
        try apply([.progress(file, destination: destination, bytes: bytes)])
    }

    public func noteRetry(_ file: FileKey, destination: String, error: String, at now: Date) throws {
        try apply([.retryNote(file, destination: destination, error: error, at: now)])
    }

    public func markSynced(_ file: FileKey, destination: String, receipt: Receipt, size: Int64, modificationTime: Date, sha256: String?, at now: Date) throws {
        try apply([.synced(file, destination: destination, receipt: receipt, size: size, modificationTime: modificationTime, sha256: sha256, at: now)])
    }

    /// Records a failure that ends this run's attempts. A retryable one gets its next retry time from the number of
    /// runs it has failed in (growing up to `max_retry_interval`, none after `give_up_after`); a permanent one is
    /// not retried automatically.
    public func markFailed(_ file: FileKey, destination: String, failure: DeliveryFailure, retry: RetrySettings, at now: Date) throws {
        try apply([.failed(file, destination: destination, failure: failure, retry: retry, at: now)])
    }

    public func markInterrupted(_ file: FileKey, destination: String, at now: Date) throws {
        try apply([.interrupted(file, destination: destination, at: now)])
    }

    /// How long after its n-th failed run a file is tried again: 1 minute, doubling, up to `max_retry_interval`.
    public static func retryInterval(failedRuns: Int, retry: RetrySettings) -> TimeInterval {
        let doubled = 60.0 * pow(2.0, Double(min(max(failedRuns - 1, 0), 30)))
        return min(retry.maxRetryInterval.seconds, doubled)
    }

    /// One encoder for every receipt (making one per row cost more than the encoding).
    static let receiptEncoder = JSONEncoder()

    /// Applies one update; a `.synced` with `attemptStartedAt` also counts the attempt that started then (what its
    /// `.uploading` would have written).
    static func apply(_ update: Update, in db: Database, attemptStartedAt: Date? = nil) throws {
        switch update {
        case .uploading(let file, let destination, let now):
            try db.cachedStatement(sql: """
                UPDATE files SET status = 'uploading', attempts = attempts + 1, last_attempt_at = ?, bytes_done = 0, updated_at = ?
                WHERE source = ? AND path = ? AND destination = ?
                """).execute(arguments: [now.timeIntervalSince1970, now.timeIntervalSince1970, file.source, file.path, destination])
        case .progress(let file, let destination, let bytes):
            try db.cachedStatement(sql: "UPDATE files SET bytes_done = ? WHERE source = ? AND path = ? AND destination = ?")
                .execute(arguments: [bytes, file.source, file.path, destination])
        case .retryNote(let file, let destination, let error, let now):
            try db.cachedStatement(sql: "UPDATE files SET last_error = ?, updated_at = ? WHERE source = ? AND path = ? AND destination = ?")
                .execute(arguments: [Redactor.shared.redact(error), now.timeIntervalSince1970, file.source, file.path, destination])
        case .synced(let file, let destination, let receipt, let size, let modificationTime, let sha256, let now):
            let receiptText = String(decoding: try Ledger.receiptEncoder.encode(receipt), as: UTF8.self)
            // Without a folded attempt start, `attempts + ?` adds 0 and `COALESCE(?, last_attempt_at)` keeps the column.
            try db.cachedStatement(sql: """
                UPDATE files SET status = 'synced', last_error = NULL, error_class = NULL, error_code = NULL,
                    next_retry_at = NULL, failed_runs = 0, first_failed_at = NULL, size = ?, mtime = ?, sha256 = ?,
                    receipt = ?, bytes_done = ?, synced_at = ?, updated_at = ?,
                    attempts = attempts + ?, last_attempt_at = COALESCE(?, last_attempt_at)
                WHERE source = ? AND path = ? AND destination = ?
                """).execute(arguments: [size, modificationTime.timeIntervalSince1970, sha256, Redactor.shared.redact(receiptText), size,
                                         now.timeIntervalSince1970, now.timeIntervalSince1970,
                                         attemptStartedAt == nil ? 0 : 1, attemptStartedAt?.timeIntervalSince1970,
                                         file.source, file.path, destination])
        case .failed(let file, let destination, let failure, let retry, let now):
            let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT failed_runs, first_failed_at FROM files WHERE source = ? AND path = ? AND destination = ?"),
                                       arguments: [file.source, file.path, destination])
            let failedRuns = (row?["failed_runs"] as Int? ?? 0) + 1
            let firstFailed = (row?["first_failed_at"] as Double?) ?? now.timeIntervalSince1970
            var next: Double? = nil
            if failure.failureClass.isRetryable {
                let givenUp = now.timeIntervalSince1970 - firstFailed >= retry.giveUpAfter.seconds
                if !givenUp {
                    next = now.timeIntervalSince1970 + max(Ledger.retryInterval(failedRuns: failedRuns, retry: retry), failure.retryAfter?.seconds ?? 0)
                }
            }
            try db.cachedStatement(sql: """
                UPDATE files SET status = 'failed', last_error = ?, error_class = ?, error_code = ?, next_retry_at = ?,
                    failed_runs = ?, first_failed_at = ?, bytes_done = 0, updated_at = ?
                WHERE source = ? AND path = ? AND destination = ?
                """).execute(arguments: [Redactor.shared.redact(failure.message), failure.failureClass.isRetryable ? "retryable" : "permanent",
                                         failure.code, next, failedRuns, firstFailed, now.timeIntervalSince1970,
                                         file.source, file.path, destination])
        case .interrupted(let file, let destination, let now):
            try db.cachedStatement(sql: "UPDATE files SET status = 'pending', bytes_done = 0, updated_at = ? WHERE source = ? AND path = ? AND destination = ? AND status != 'synced'")
                .execute(arguments: [now.timeIntervalSince1970, file.source, file.path, destination])
        }
    }

    /// Rows left `uploading` by a run that died are `pending` again. Returns how many.
    @discardableResult
    public func resetInterrupted(at now: Date) throws -> Int {
        try write { db in
            try db.execute(sql: "UPDATE files SET status = 'pending', bytes_done = 0, updated_at = ? WHERE status = 'uploading'",
                           arguments: [now.timeIntervalSince1970])
            return db.changesCount
        }
    }

    /// Makes failed rows (of a destination, of some paths) due now, whatever their class or age (`syncgate retry`).
    @discardableResult
    public func requestRetry(destination: String?, paths: [String], at now: Date) throws -> Int {
        try changeFailed(
            "UPDATE files SET status = 'pending', next_retry_at = NULL, first_failed_at = NULL, failed_runs = 0, updated_at = ?",
            [now.timeIntervalSince1970], destination: destination, paths: paths)
    }

    /// Drops failed rows (of a destination, of some paths). The files are then new to the next run.
    @discardableResult
    public func forgetFailed(destination: String?, paths: [String]) throws -> Int {
        try changeFailed("DELETE FROM files", [], destination: destination, paths: paths)
    }

    /// Runs `statement` on the failed rows of a destination (all when nil) and paths (all when empty).
    private func changeFailed(_ statement: String, _ leading: [any DatabaseValueConvertible], destination: String?, paths: [String]) throws -> Int {
        try write { db in
            var sql = statement + " WHERE status = 'failed'"
            var arguments = leading
            if let destination {
                sql += " AND destination = ?"
                arguments.append(destination)
            }
            if !paths.isEmpty {
                sql += " AND path IN (\(paths.map { _ in "?" }.joined(separator: ",")))"
                arguments.append(contentsOf: paths)
            }
            try db.execute(sql: sql, arguments: StatementArguments(arguments))
            return db.changesCount
        }
    }

    // MARK: - Plumbing

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try pool.read(body)
        } catch let error as DatabaseError {
            throw Ledger.explain(error, path: path)
        }
    }

    func write<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try pool.write(body)
        } catch let error as DatabaseError {
            throw Ledger.explain(error, path: path)
        }
    }

    /// The columns ``entry(_:)`` reads, in its order (by index: a lookup by name costs more than the read).
    static let columns = "source, path, destination, status, attempts, last_attempt_at, last_error, error_class, error_code, "
        + "next_retry_at, failed_runs, first_failed_at, size, mtime, sha256, receipt, bytes_done, queued_at, synced_at, updated_at"

    /// ``columns`` with NULL for the receipt.
    static let columnsWithoutReceipt = columns.replacingOccurrences(of: "receipt", with: "NULL")

    static func entry(_ row: Row) -> LedgerEntry {
        func date(_ index: Int) -> Date? { (row[index] as Double?).map { Date(timeIntervalSince1970: $0) } }
        let receipt: Receipt? = (row[15] as String?).flatMap { try? JSONDecoder().decode(Receipt.self, from: Data($0.utf8)) }
        return LedgerEntry(
            file: FileKey(source: row[0], path: row[1]), destination: row[2],
            status: FileStatus(rawValue: row[3]) ?? .pending, attempts: row[4],
            lastAttemptAt: date(5), lastError: row[6], errorClass: row[7],
            errorCode: row[8], nextRetryAt: date(9), failedRuns: row[10],
            firstFailedAt: date(11), size: row[12], modificationTime: date(13) ?? Date(timeIntervalSince1970: 0),
            sha256: row[14], receipt: receipt, bytesDone: row[16], queuedAt: date(17),
            syncedAt: date(18), updatedAt: date(19) ?? Date(timeIntervalSince1970: 0)
        )
    }
}

extension Ledger {
    /// Drops the rows of files stored under these remote names at a destination (after `syncgate rm`), so that a
    /// file still in a source is sent again.
    public func forgetRemote(destination: String, remoteNames: [String]) throws {
        let names = Set(remoteNames)
        let rows = try entries(destination: destination).filter { names.contains($0.receipt?.remoteName ?? $0.file.path) }
        try write { db in
            for row in rows {
                try db.execute(sql: "DELETE FROM files WHERE source = ? AND path = ? AND destination = ?",
                               arguments: [row.file.source, row.file.path, destination])
            }
        }
    }
}
