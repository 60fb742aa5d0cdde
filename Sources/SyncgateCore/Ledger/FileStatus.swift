/// Where a file stands at a destination.
public enum FileStatus: String, Sendable, Hashable, Codable, CaseIterable {
    /// Recorded, not delivered yet (or a run stopped before it was).
    case pending
    /// An attempt is in flight.
    case uploading
    /// Delivered; the receipt says how.
    case synced
    /// Retries ran out in a run, or the error is permanent.
    case failed
}

extension FileStatus {
    /// The status as an SQL string literal (`'synced'`), for the ledger's statements: the one place its text is
    /// spelled.
    var sql: String { "'\(rawValue)'" }

    /// Every status as a list of SQL literals, in declaration order: the `files.status` column's CHECK.
    static var sqlList: String { allCases.map(\.sql).joined(separator: ", ") }
}
