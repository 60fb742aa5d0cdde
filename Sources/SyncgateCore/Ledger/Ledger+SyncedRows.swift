import Foundation

/// On PostgreSQL every statement is a round trip to the server: the outcomes of a batch (``Ledger/apply(_:)``) that
/// record files synced, the bulk of a burst's writes, go to the server as one `UPDATE ... FROM (VALUES ...)` per
/// run of them instead of one `UPDATE` per file. SQLite, in-process, keeps one prepared statement per row.
extension Ledger {
    /// Files synced per statement (ten values each, well under PostgreSQL's 65,535 parameters).
    static let syncedRowsPerStatement = 500

    /// Applies `changes` in order, as ``apply(_:in:attemptStartedAt:claimant:)`` one by one would: consecutive
    /// `.synced` changes of distinct rows are written by one statement each run.
    static func applyGrouped(_ changes: [(update: Update, attemptStartedAt: Date?)], in db: any LedgerConnection, claimant: String) throws {
        guard db.dialect.isPostgres else {
            for change in changes { try apply(change.update, in: db, attemptStartedAt: change.attemptStartedAt, claimant: claimant) }
            return
        }
        var run: [(update: Update, attemptStartedAt: Date?)] = []
        var rowsInRun = Set<String>()
        func flush() throws {
            if run.count == 1 {
                try apply(run[0].update, in: db, attemptStartedAt: run[0].attemptStartedAt, claimant: claimant)
            } else if !run.isEmpty {
                try applySynced(run, in: db, claimant: claimant)
            }
            run.removeAll(keepingCapacity: true)
            rowsInRun.removeAll(keepingCapacity: true)
        }
        for change in changes {
            guard case .synced(let file, let destination, _, _, _, _, _) = change.update else {
                try flush()
                try apply(change.update, in: db, attemptStartedAt: change.attemptStartedAt, claimant: claimant)
                continue
            }
            // A row changed twice within a run would be updated once by a joined UPDATE: its second change waits.
            let row = "\(file.source)\u{0}\(file.path)\u{0}\(destination)"
            if rowsInRun.contains(row) || run.count == syncedRowsPerStatement { try flush() }
            rowsInRun.insert(row)
            run.append(change)
        }
        try flush()
    }

    /// Several `.synced` changes of distinct rows in one statement, with the effect of the single-row form in
    /// ``apply(_:in:attemptStartedAt:claimant:)`` on each (same columns, same condition on the row's holder).
    private static func applySynced(_ run: [(update: Update, attemptStartedAt: Date?)], in db: any LedgerConnection, claimant: String) throws {
        let tuple = "(?::text, ?::text, ?::text, ?::bigint, ?::double precision, ?::text, ?::text, ?::double precision, ?::bigint, ?::double precision)"
        var arguments: [any LedgerBindable] = []
        arguments.reserveCapacity(run.count * 10 + 1)
        for change in run {
            guard case .synced(let file, let destination, let receipt, let size, let modificationTime, let sha256, let now) = change.update else { continue }
            let receiptText = String(decoding: try receiptEncoder.encode(receipt), as: UTF8.self)
            arguments += [file.source, file.path, destination, size, modificationTime.timeIntervalSince1970, sha256,
                          Redactor.shared.redact(receiptText), now.timeIntervalSince1970,
                          change.attemptStartedAt == nil ? 0 : 1, change.attemptStartedAt?.timeIntervalSince1970] as [any LedgerBindable]
        }
        arguments.append(claimant)
        try db.execute("""
            UPDATE files SET status = \(FileStatus.synced.sql), last_error = NULL, error_class = NULL, error_code = NULL,
                next_retry_at = NULL, failed_runs = 0, first_failed_at = NULL, size = v.size, mtime = v.mtime, sha256 = v.sha256,
                receipt = v.receipt, bytes_done = v.size, synced_at = v.at, updated_at = v.at,
                attempts = files.attempts + v.started, last_attempt_at = COALESCE(v.started_at, files.last_attempt_at),
                claimed_by = NULL, lease_until = NULL
            FROM (VALUES \(Array(repeating: tuple, count: run.count).joined(separator: ", ")))
                AS v(source, path, destination, size, mtime, sha256, receipt, at, started, started_at)
            WHERE files.source = v.source AND files.path = v.path AND files.destination = v.destination
                AND \(stillHeld(db.dialect, table: "files."))
            """, arguments)
    }
}
