/// The words in which the ledger's SQL differs between SQLite and PostgreSQL.
struct SQLDialect: Sendable {
    /// The engine's name in messages.
    var name: String
    /// A floating-point column (seconds since 1970).
    var real: String
    /// An integer column (sizes and counts: 64 bits).
    var integer: String
    /// A text column of a key: ordered bytewise, the order of a scan that the planner's merge walk relies on.
    var keyText: String
    /// What follows a table of ours with a primary key of text.
    var tableSuffix: String
    /// The names of the tables in the database (one text column).
    var tableNamesQuery: String
    /// A column named in a condition so that no index is used to look it up (the primary key gives the order).
    var unindexed: @Sendable (String) -> String
    /// The database server's time now, in seconds since 1970 (leases are timed by the server that keeps them, not
    /// by the clocks of the instances).
    var now: String

    var isPostgres: Bool { name == "PostgreSQL" }

    static let sqlite = SQLDialect(
        name: "SQLite", real: "REAL", integer: "INTEGER", keyText: "TEXT", tableSuffix: " WITHOUT ROWID",
        tableNamesQuery: "SELECT name FROM sqlite_master WHERE type = 'table'", unindexed: { "+" + $0 },
        now: "((julianday('now') - 2440587.5) * 86400.0)")

    static let postgres = SQLDialect(
        name: "PostgreSQL", real: "DOUBLE PRECISION", integer: "BIGINT", keyText: "TEXT COLLATE \"C\"", tableSuffix: "",
        tableNamesQuery: "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()", unindexed: { $0 },
        now: "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)")
}
