import Foundation
import GRDB

extension Ledger {
    /// Checks that the database is a syncgate ledger of a schema this version reads, upgrading an older one in
    /// place; creates the schema in an empty database. Anything else is refused and left untouched.
    static func checkOrCreateSchema(_ db: Database, existed: Bool, path: String) throws {
        let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
        if tables.contains("syncgate_meta") {
            let format = try String.fetchOne(db, sql: "SELECT value FROM syncgate_meta WHERE key = 'format'")
            let schemaText = try String.fetchOne(db, sql: "SELECT value FROM syncgate_meta WHERE key = 'schema'")
            guard format == Ledger.format else { throw LedgerError(path: path, message: "is not a syncgate state file") }
            guard let schema = schemaText.flatMap(Int.init), schema >= 1 else {
                throw LedgerError(path: path, message: "has an unreadable schema version (\(schemaText ?? "none"))")
            }
            guard schema <= Ledger.schemaVersion else {
                throw LedgerError(path: path, message: "was written by a newer syncgate (schema \(schema), this one reads up to \(Ledger.schemaVersion)); upgrade syncgate")
            }
            if schema < 2 { try createDestinationsTable(db) }
            if schema < 3 { try createResumeTable(db) }
            if schema < 4 { try addRemovalColumns(db) }
            if schema < Ledger.schemaVersion {
                try db.execute(sql: "UPDATE syncgate_meta SET value = ? WHERE key = 'schema'", arguments: [String(Ledger.schemaVersion)])
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
        try createDestinationsTable(db)
        try createResumeTable(db)
        try addRemovalColumns(db)
    }

    /// Schema 4: rows of files gone from their source (``Removal``): how, and since when.
    private static func addRemovalColumns(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE files ADD COLUMN removed TEXT;
            ALTER TABLE files ADD COLUMN removed_at REAL;
            CREATE INDEX files_removed ON files (destination, removed_at) WHERE removed IS NOT NULL;
            """)
    }

    /// Schema 3: what a destination needs to resume an interrupted upload in a later run (an S3 multipart upload's
    /// id and finished parts), by destination and remote name, as the plugin wrote it (``ResumeStore``).
    private static func createResumeTable(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE IF NOT EXISTS resume_state (
                destination TEXT NOT NULL,
                name TEXT NOT NULL,
                value TEXT NOT NULL,
                updated_at REAL NOT NULL,
                PRIMARY KEY (destination, name)
            ) WITHOUT ROWID;
            """)
    }

    /// Schema 2: one row per destination that has been tried, with its state (see ``DestinationRecord``), and an
    /// index on failed files' next retry time (a gateway sleeps until the earliest).
    private static func createDestinationsTable(_ db: Database) throws {
        try db.execute(sql: """
            CREATE INDEX IF NOT EXISTS files_failed_by_next_retry ON files (destination, next_retry_at) WHERE status = 'failed';
            CREATE TABLE IF NOT EXISTS destinations (
                name TEXT PRIMARY KEY NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('available', 'unavailable', 'blocked')),
                since REAL NOT NULL,
                last_error TEXT,
                error_code TEXT,
                failed_probes INTEGER NOT NULL DEFAULT 0,
                next_probe_at REAL,
                fingerprint TEXT,
                last_seen_at REAL,
                updated_at REAL NOT NULL
            ) WITHOUT ROWID;
            """)
    }
}
