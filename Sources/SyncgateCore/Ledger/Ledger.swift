import Foundation
import GRDB

/// The state ledger: one row per (source file, destination) in SQLite (WAL), written before any upload starts and
/// after every step, so that a crash at any moment leaves a state the next run resumes from. Readable by
/// `syncgate status` from another process while a sync runs.
public final class Ledger: Sendable {
    public let path: String
    let pool: DatabasePool
    /// The file opened (see ``LedgerIdentity``); nil only if it could not be read right after opening.
    let identity: LedgerIdentity?
    /// Set once the file was found deleted or replaced: every later write fails the same way.
    private let lost = LostState()
    /// Fired after each commit of this process that changes what `status` reads (see ``commits()``).
    private let committed = CommitSignal()

    static let format = "syncgate-ledger"
    /// The schema this syncgate writes. Versions 1 (files only), 2 (destination states), 3 (resumable uploads) are
    /// upgraded in place; a newer one is refused.
    static let schemaVersion = 4

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
        // Three readers at most (a sync reads from one or two; a gateway adds its status page), each with a 1 MiB page
        // cache instead of SQLite's 2 MiB: the rows are read in order, once, and the OS caches the file anyway.
        configuration.maximumReaderCount = 3
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try db.execute(sql: "PRAGMA cache_size = -1024")
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
        identity = LedgerIdentity.of(path)
    }

    /// Throws when the state file was deleted or replaced since it was opened, after saving what this process
    /// holds of it: back at its path when nothing is there any more, beside it (`.recovered-<pid>`) when another
    /// file took its place. Writing on would record into a file nobody will read again.
    func checkIdentity() throws {
        guard let identity else { return }
        try lost.withLock { lostError in
            if let lostError { throw lostError }
            let now = LedgerIdentity.of(path)
            guard now != identity else { return }
            let error = saveAfterLoss(found: now)
            lostError = error
            throw error
        }
    }

    private func saveAfterLoss(found now: LedgerIdentity?) -> LedgerError {
        let target = now == nil ? path : path + ".recovered-\(getpid())"
        var saved = "nothing could be saved"
        do {
            try pool.writeWithoutTransaction { db in try db.execute(sql: "VACUUM INTO ?", arguments: [target]) }
            saved = now == nil ? "what this run had recorded was written back to it" : "what this run had recorded is in \(target)"
        } catch {
            saved = "saving what this run had recorded failed (\(error))"
        }
        let what = now == nil ? "was deleted" : "was replaced by another file"
        return LedgerError(path: path, message: "\(what) while syncgate was using it; \(saved). The run stopped: check who removes this file, then run again", stateLost: true)
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


    // MARK: - Plumbing

    func read<T>(_ body: (Database) throws -> T) throws -> T {
        do {
            return try pool.read(body)
        } catch let error as DatabaseError {
            throw Ledger.explain(error, path: path)
        }
    }

    /// Writes in one transaction, then makes sure the file written is still the state file: a write made after it
    /// was deleted or replaced is saved with the rest (``checkIdentity()``), and the caller learns of the loss.
    /// `notify: false` for a write that changes nothing `status` counts (an upload's byte progress).
    func write<T>(notify: Bool = true, _ body: (Database) throws -> T) throws -> T {
        let result: T
        do {
            result = try pool.write(body)
        } catch let error as DatabaseError {
            throw Ledger.explain(error, path: path)
        }
        try checkIdentity()
        if notify { committed.fire() }
        return result
    }

    /// A write made durable before it returns: the connection syncs the write-ahead log at this commit
    /// (`synchronous = FULL`), where the ledger's other commits leave that to the next checkpoint.
    func durably<T>(_ body: (Database) throws -> T) throws -> T {
        let result: T
        do {
            result = try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                defer { try? db.execute(sql: "PRAGMA synchronous = NORMAL") }
                var value: T?
                try db.inTransaction {
                    value = try body(db)
                    return .commit
                }
                return value!
            }
        } catch let error as DatabaseError {
            throw Ledger.explain(error, path: path)
        }
        try checkIdentity()
        committed.fire()
        return result
    }

    /// A signal after each commit this process makes to the ledger that changes what ``StatusReport`` reads: the
    /// status page reads the report again on it, since a delivery event reaches it before its batch is written.
    /// Commits close together come as one signal to a listener that has not taken the last one yet. Changes other
    /// processes make are not signalled (see ``changeCounter()``).
    public func commits() -> AsyncStream<Void> { committed.subscribe() }

    /// The columns ``entry(_:)`` reads, in its order (by index: a lookup by name costs more than the read).
    static let columns = "source, path, destination, status, attempts, last_attempt_at, last_error, error_class, error_code, "
        + "next_retry_at, failed_runs, first_failed_at, size, mtime, sha256, receipt, bytes_done, queued_at, synced_at, updated_at, removed, removed_at"

    /// ``columns`` with NULL for the receipt.
    static let columnsWithoutReceipt = columns.replacingOccurrences(of: "receipt", with: "NULL")

    static func entry(_ row: Row) -> LedgerEntry {
        func date(_ index: Int) -> Date? { (row[index] as Double?).map { Date(timeIntervalSince1970: $0) } }
        let receipt: Receipt? = (row[15] as String?).flatMap { try? JSONDecoder().decode(Receipt.self, from: Data($0.utf8)) }
        return LedgerEntry(
            file: FileKey(source: row[0], path: row[1]), destination: row[2],
            status: FileStatus(rawValue: row[3]) ?? .pending, attempts: row[4],
            lastAttemptAt: date(5), lastError: row[6], errorClass: (row[7] as String?).flatMap(FailureClass.init(name:)),
            errorCode: row[8], nextRetryAt: date(9), failedRuns: row[10],
            firstFailedAt: date(11), size: row[12], modificationTime: date(13) ?? Date(timeIntervalSince1970: 0),
            sha256: row[14], receipt: receipt, bytesDone: row[16], queuedAt: date(17),
            syncedAt: date(18), updatedAt: date(19) ?? Date(timeIntervalSince1970: 0),
            removed: (row[20] as String?).flatMap(Removal.init(rawValue:)), removedAt: date(21)
        )
    }
}

/// The ledger's "file lost" verdict, shared by every writer.
final class LostState: @unchecked Sendable {
    private let lock = NSLock()
    private var error: LedgerError?
    func withLock<T>(_ body: (inout LedgerError?) throws -> T) rethrows -> T {
        try lock.withLock { try body(&error) }
    }
}
