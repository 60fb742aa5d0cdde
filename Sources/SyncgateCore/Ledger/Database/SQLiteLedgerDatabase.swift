#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import GRDB

/// The ledger in an SQLite file (WAL, `synchronous = NORMAL`), through GRDB: a writer and up to three readers,
/// readable by `syncgate status` from another process while a sync runs. Notices the file being deleted or replaced
/// under it (``LedgerIdentity``) and saves what it holds.
final class SQLiteLedgerDatabase: LedgerDatabase {
    let path: String
    let pool: DatabasePool
    /// The file opened (see ``LedgerIdentity``); nil only if it could not be read right after opening.
    private let identity: LedgerIdentity?
    /// Set once the file was found deleted or replaced: every later write fails the same way.
    private let lost = LostState()

    var dialect: SQLDialect { .sqlite }

    /// Opens (creating if needed) the database at `path`, then `prepare` (the schema check) in a write. A file that
    /// is not SQLite or is damaged is reported, never replaced.
    init(path: String, prepare: (any LedgerConnection) throws -> Void) throws {
        self.path = path
        let folder = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw LedgerError(path: path, message: "cannot create its folder: \(error.localizedDescription)")
        }
        SQLiteLedgerDatabase.makePrivate(path)
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
            throw SQLiteLedgerDatabase.explain(error, path: path)
        }
        do {
            try pool.write { db in try prepare(SQLiteLedgerConnection(db: db)) }
        } catch let error as DatabaseError {
            throw SQLiteLedgerDatabase.explain(error, path: path)
        }
        identity = LedgerIdentity.of(path)
    }

    /// The state file holds what destinations answered (error texts, receipts): it is its owner's alone. A new file
    /// is created 0600 before SQLite opens it (SQLite gives its `-wal` and `-shm` files the mode of the database
    /// file); an existing one, and its `-wal` and `-shm`, lose any group and other permissions.
    static func makePrivate(_ path: String) {
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd >= 0 {
            #if canImport(Glibc)
            Glibc.close(fd)
            #else
            Darwin.close(fd)
            #endif
        }
        for file in [path, path + "-wal", path + "-shm"] {
            var st = stat()
            guard lstat(file, &st) == 0, st.st_mode & S_IFMT == S_IFREG, st.st_mode & 0o077 != 0 else { continue }
            chmod(file, st.st_mode & 0o700)
        }
    }

    func read<T>(_ body: (any LedgerConnection) throws -> T) throws -> T {
        do {
            return try pool.read { db in try body(SQLiteLedgerConnection(db: db)) }
        } catch let error as DatabaseError {
            throw SQLiteLedgerDatabase.explain(error, path: path)
        }
    }

    /// A durable write makes the connection sync the write-ahead log at this commit (`synchronous = FULL`), where
    /// the ledger's other commits leave that to the next checkpoint.
    func write<T>(durable: Bool, _ body: (any LedgerConnection) throws -> T) throws -> T {
        do {
            guard durable else { return try pool.write { db in try body(SQLiteLedgerConnection(db: db)) } }
            return try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                defer { try? db.execute(sql: "PRAGMA synchronous = NORMAL") }
                var value: T?
                try db.inTransaction {
                    value = try body(SQLiteLedgerConnection(db: db))
                    return .commit
                }
                return value!
            }
        } catch let error as DatabaseError {
            throw SQLiteLedgerDatabase.explain(error, path: path)
        }
    }

    /// SQLite's `data_version`: it changes when another connection commits.
    func changeCounter() throws -> Int {
        try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA data_version") ?? 0 }
    }

    func noteChange(_ connection: any LedgerConnection) throws {}

    func close() {}

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

    static func explain(_ error: DatabaseError, path: String) -> LedgerError {
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
}
