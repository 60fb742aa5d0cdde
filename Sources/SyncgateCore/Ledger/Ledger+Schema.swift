import Foundation

extension Ledger {
    /// PostgreSQL: the advisory lock (key pair) taken by the transaction that checks or creates the schema, so
    /// that two instances starting at once do not both create it.
    static let schemaLockKey: (Int32, Int32) = (0x5347_4C47, 0)

    /// Checks that the database is a syncgate ledger of a schema this version reads, upgrading an older one in
    /// place; creates the schema in an empty database. Anything else is refused and left untouched.
    static func checkOrCreateSchema(_ db: any LedgerConnection, path: String) throws -> SchemaChange {
        let d = db.dialect
        if d.isPostgres {
            try db.execute("SELECT pg_advisory_xact_lock(\(schemaLockKey.0), \(schemaLockKey.1))", [])
        }
        let tables = try db.fetchAll(d.tableNamesQuery, []).compactMap { $0.string(0) }
        if tables.contains("syncgate_meta") {
            let format = try db.fetchOne("SELECT value FROM syncgate_meta WHERE key = 'format'", [])?.string(0)
            let schemaText = try db.fetchOne("SELECT value FROM syncgate_meta WHERE key = 'schema'", [])?.string(0)
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
            if schema < 5 { try addClaimColumns(db) }
            if schema < 6 { try addJudgementTables(db) }
            if schema < 7 { try addLeaderTable(db) }
            if schema < 8 { try addVerificationTable(db) }
            if schema < 9 { try addTargetTable(db) }
            if schema < Ledger.schemaVersion {
                try db.execute("UPDATE syncgate_meta SET value = ? WHERE key = 'schema'", [String(Ledger.schemaVersion)])
                return .upgraded(from: schema, to: Ledger.schemaVersion)
            }
            return .current(schema)
        }
        if !tables.isEmpty {
            throw LedgerError(path: path, message: "is \(d.isPostgres ? "a PostgreSQL" : "an SQLite") database of another program (tables: \(tables.sorted().prefix(5).joined(separator: ", "))); it was left untouched")
        }
        for statement in [
            "CREATE TABLE syncgate_meta (key \(d.keyText) PRIMARY KEY NOT NULL, value TEXT NOT NULL)",
            "INSERT INTO syncgate_meta (key, value) VALUES ('format', '\(Ledger.format)'), ('schema', '\(Ledger.schemaVersion)')",
            """
            CREATE TABLE files (
                source \(d.keyText) NOT NULL,
                path \(d.keyText) NOT NULL,
                destination \(d.keyText) NOT NULL,
                status TEXT NOT NULL CHECK (status IN (\(FileStatus.sqlList))),
                attempts \(d.integer) NOT NULL DEFAULT 0,
                last_attempt_at \(d.real),
                last_error TEXT,
                error_class TEXT,
                error_code TEXT,
                next_retry_at \(d.real),
                failed_runs \(d.integer) NOT NULL DEFAULT 0,
                first_failed_at \(d.real),
                size \(d.integer) NOT NULL,
                mtime \(d.real) NOT NULL,
                sha256 TEXT,
                receipt TEXT,
                bytes_done \(d.integer) NOT NULL DEFAULT 0,
                queued_at \(d.real),
                synced_at \(d.real),
                updated_at \(d.real) NOT NULL,
                PRIMARY KEY (source, path, destination)
            )\(d.tableSuffix)
            """,
            "CREATE INDEX files_by_destination_status ON files (destination, status)",
        ] {
            try db.executeOnce(statement, [])
        }
        try createDestinationsTable(db)
        try createResumeTable(db)
        try addRemovalColumns(db)
        try addClaimColumns(db)
        try addJudgementTables(db)
        try addLeaderTable(db)
        try addVerificationTable(db)
        try addTargetTable(db)
        return .created(Ledger.schemaVersion)
    }

    /// Schema 9: per destination, where its copies went when its rows were last recorded (``DestinationTarget``):
    /// a digest of what identifies it (never the text itself, which may name a capability URL), what `syncgate`
    /// says of it, when and by which instance it was recorded.
    private static func addTargetTable(_ db: any LedgerConnection) throws {
        let d = db.dialect
        try db.executeOnce("""
            CREATE TABLE destination_targets (
                destination \(d.keyText) PRIMARY KEY NOT NULL,
                digest TEXT NOT NULL,
                description TEXT NOT NULL,
                recorded_at \(d.real) NOT NULL,
                recorded_by TEXT
            )\(d.tableSuffix)
            """, [])
    }

    /// Schema 8: per destination, its last verification (`syncgate check`, ``VerificationRecord``): when, how many
    /// synced rows it compared, and what it found and repaired.
    private static func addVerificationTable(_ db: any LedgerConnection) throws {
        let d = db.dialect
        try db.executeOnce("""
            CREATE TABLE verifications (
                destination \(d.keyText) PRIMARY KEY NOT NULL,
                verified_at \(d.real) NOT NULL,
                checked \(d.integer) NOT NULL,
                missing \(d.integer) NOT NULL,
                different \(d.integer) NOT NULL,
                extra \(d.integer) NOT NULL,
                errors \(d.integer) NOT NULL,
                repaired \(d.integer) NOT NULL
            )\(d.tableSuffix)
            """, [])
    }

    /// Schema 7: the leaders of destinations that need one writer (``DestinationLeadership``): per destination the
    /// epoch of its last lead (from the sequence `leader_epochs` on PostgreSQL, where a fleet has leaders), who holds
    /// it, and until when (the server's time, renewed with the leases; NULL once given up). A leader's writes are
    /// made only while its epoch is the destination's.
    private static func addLeaderTable(_ db: any LedgerConnection) throws {
        let d = db.dialect
        try db.executeOnce("""
            CREATE TABLE destination_leaders (
                destination \(d.keyText) PRIMARY KEY NOT NULL,
                epoch \(d.integer) NOT NULL,
                holder TEXT,
                lead_until \(d.real)
            )\(d.tableSuffix)
            """, [])
        if d.isPostgres { try db.executeOnce("CREATE SEQUENCE IF NOT EXISTS leader_epochs", []) }
    }

    /// Schema 6: what the engine's own decisions rest on across runs.
    /// - `destinations.retry_after_until`: a destination that asked to be left alone (a destination-scoped answer
    ///   with Retry-After) is not tried before then, by any later run (``DestinationRecord/retryAfterUntil``).
    /// - `source_roots`: per source, the identity of its root folder (device and inode) and how many files its last
    ///   complete walk found, so that a mirror can tell a source that went away (an unmounted mount point, a link
    ///   switched to another folder) from files deleted one by one.
    /// - `remote_deletions`: when copies were deleted at a destination because their source files were removed, and
    ///   how many, so that `max_delete` can count over a rolling window in a long-running gateway.
    private static func addJudgementTables(_ db: any LedgerConnection) throws {
        let d = db.dialect
        for statement in [
            "ALTER TABLE destinations ADD COLUMN retry_after_until \(d.real)",
            """
            CREATE TABLE source_roots (
                source \(d.keyText) PRIMARY KEY NOT NULL,
                device TEXT NOT NULL,
                inode TEXT NOT NULL,
                files \(d.integer) NOT NULL,
                walked_at \(d.real) NOT NULL
            )\(d.tableSuffix)
            """,
            """
            CREATE TABLE remote_deletions (
                destination \(d.keyText) NOT NULL,
                deleted_at \(d.real) NOT NULL,
                count \(d.integer) NOT NULL,
                PRIMARY KEY (destination, deleted_at)
            )\(d.tableSuffix)
            """,
        ] {
            try db.executeOnce(statement, [])
        }
    }

    /// Schema 5: the instance that holds a row for its upload (``Ledger/instanceID``) and until when its lease runs
    /// (seconds since 1970 on the database server's clock); both NULL when nobody holds it. And the instances working
    /// on the ledger (see ``Ledger/fleetView()``): until when each is alive unless renewed and when it left; and per
    /// instance and destination, the view of the fleet whose share it walked last (``FleetView/signature``).
    private static func addClaimColumns(_ db: any LedgerConnection) throws {
        let d = db.dialect
        for statement in [
            "ALTER TABLE files ADD COLUMN claimed_by TEXT",
            "ALTER TABLE files ADD COLUMN lease_until \(d.real)",
            "CREATE INDEX files_claimed ON files (claimed_by) WHERE claimed_by IS NOT NULL",
            "CREATE TABLE instances (id \(d.keyText) PRIMARY KEY NOT NULL, alive_until \(d.real) NOT NULL, left_at \(d.real))\(d.tableSuffix)",
            """
            CREATE TABLE instance_walks (instance \(d.keyText) NOT NULL, destination \(d.keyText) NOT NULL, view TEXT NOT NULL,
                PRIMARY KEY (instance, destination))\(d.tableSuffix)
            """,
        ] {
            try db.executeOnce(statement, [])
        }
    }

    /// Schema 4: rows of files gone from their source (``Removal``): how, and since when.
    private static func addRemovalColumns(_ db: any LedgerConnection) throws {
        for statement in [
            "ALTER TABLE files ADD COLUMN removed TEXT",
            "ALTER TABLE files ADD COLUMN removed_at \(db.dialect.real)",
            "CREATE INDEX files_removed ON files (destination, removed_at) WHERE removed IS NOT NULL",
        ] {
            try db.executeOnce(statement, [])
        }
    }

    /// Schema 3: what a destination needs to resume an interrupted upload in a later run (an S3 multipart upload's
    /// id and finished parts), by destination and remote name, as the plugin wrote it (``ResumeStore``).
    private static func createResumeTable(_ db: any LedgerConnection) throws {
        let d = db.dialect
        try db.executeOnce("""
            CREATE TABLE IF NOT EXISTS resume_state (
                destination \(d.keyText) NOT NULL,
                name \(d.keyText) NOT NULL,
                value TEXT NOT NULL,
                updated_at \(d.real) NOT NULL,
                PRIMARY KEY (destination, name)
            )\(d.tableSuffix)
            """, [])
    }

    /// Schema 2: one row per destination that has been tried, with its state (see ``DestinationRecord``), and an
    /// index on failed files' next retry time (a gateway sleeps until the earliest).
    private static func createDestinationsTable(_ db: any LedgerConnection) throws {
        let d = db.dialect
        for statement in [
            "CREATE INDEX IF NOT EXISTS files_failed_by_next_retry ON files (destination, next_retry_at) WHERE status = \(FileStatus.failed.sql)",
            """
            CREATE TABLE IF NOT EXISTS destinations (
                name \(d.keyText) PRIMARY KEY NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('available', 'unavailable', 'blocked')),
                since \(d.real) NOT NULL,
                last_error TEXT,
                error_code TEXT,
                failed_probes \(d.integer) NOT NULL DEFAULT 0,
                next_probe_at \(d.real),
                fingerprint TEXT,
                last_seen_at \(d.real),
                updated_at \(d.real) NOT NULL
            )\(d.tableSuffix)
            """,
        ] {
            try db.executeOnce(statement, [])
        }
    }
}
