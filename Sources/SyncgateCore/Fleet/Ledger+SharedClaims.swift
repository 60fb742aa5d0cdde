import Foundation

/// How a wave's rows are recorded and claimed on a shared ledger (PostgreSQL), in a few statements per wave rather
/// than one per row:
/// 1. `SELECT ... FOR UPDATE SKIP LOCKED` locks the wave's existing rows that no other transaction holds;
/// 2. those are updated to `pending` and claimed by one upsert per kind of row, unless another instance holds
///    them under a lease that has not ended (or, for a plan that expected the file undelivered, delivered them);
/// 3. rows that do not exist yet are inserted claimed (`ON CONFLICT DO NOTHING`: another instance that inserted
///    one first keeps it);
/// 4. rows skipped because another transaction had them locked are looked at once more, unlocked: one that nobody
///    holds (the lock was another instance's passing write) is recorded as in step 2, waiting for that lock.
extension Ledger {
    private struct RowKey: Hashable {
        var source: String
        var path: String
        var destination: String
    }

    /// ``recordPending(_:at:)`` on a shared ledger: returns, in the order of `rows`, whether each was recorded and
    /// claimed by this instance.
    func recordPendingShared(_ rows: [Pending], at now: Date, in db: any LedgerConnection) throws -> [Bool] {
        let d = db.dialect
        func key(_ row: Pending) -> RowKey { RowKey(source: row.file.source, path: row.file.path, destination: row.destination) }
        func keys(_ found: [LedgerRow]) -> Set<RowKey> {
            Set(found.compactMap { row in
                guard let source = row.string(0), let path = row.string(1), let destination = row.string(2) else { return nil }
                return RowKey(source: source, path: path, destination: destination)
            })
        }
        // One row per key (the first), so that no statement touches a row twice.
        var unique: [Pending] = []
        var seen = Set<RowKey>()
        for row in rows where seen.insert(key(row)).inserted { unique.append(row) }

        // The keys joined as a list of values (a long `IN` list of row values costs the planner more than the
        // lookups: 44 ms for a wave of 256 to 4,096 rows, measured).
        let tuples = Array(repeating: "(?::text, ?::text, ?::text)", count: unique.count).joined(separator: ", ")
        let keyArguments: [any LedgerBindable] = unique.flatMap { [$0.file.source, $0.file.path, $0.destination] as [any LedgerBindable] }
        let existing = keys(try db.fetchAll("""
            SELECT files.source, files.path, files.destination FROM files
            JOIN (VALUES \(tuples)) AS wave(source, path, destination)
                ON files.source = wave.source AND files.path = wave.path AND files.destination = wave.destination
            FOR UPDATE OF files SKIP LOCKED
            """, keyArguments))

        let t = now.timeIntervalSince1970
        let columns = "source, path, destination, status, size, mtime, sha256, queued_at, updated_at, claimed_by, lease_until"
        func values(_ rows: [Pending]) -> (String, [any LedgerBindable]) {
            let text = Array(repeating: "(?, ?, ?, \(FileStatus.pending.sql), ?, ?, ?, ?, ?, ?, \(d.now) + ?)", count: rows.count).joined(separator: ", ")
            let arguments: [any LedgerBindable] = rows.flatMap { row in
                [row.file.source, row.file.path, row.destination, row.size, row.modificationTime.timeIntervalSince1970,
                 row.sha256, t, t, instanceID, leaseSeconds] as [any LedgerBindable]
            }
            return (text, arguments)
        }
        var taken = Set<RowKey>()
        // Existing rows: one upsert per kind (whether the content changed, whether the plan expected it undelivered).
        func update(_ rows: [Pending]) throws {
            for contentChanged in [false, true] {
                for unlessSynced in [false, true] {
                    let group = rows.filter { $0.contentChanged == contentChanged && $0.unlessSynced == unlessSynced }
                    guard !group.isEmpty else { continue }
                    let (text, arguments) = values(group)
                    taken.formUnion(keys(try db.fetchAll("""
                        INSERT INTO files (\(columns)) VALUES \(text)
                        ON CONFLICT (source, path, destination) DO UPDATE SET
                            status = \(FileStatus.pending.sql), size = excluded.size, mtime = excluded.mtime, sha256 = excluded.sha256,
                            queued_at = excluded.queued_at, updated_at = excluded.updated_at, bytes_done = 0,
                            removed = NULL, removed_at = NULL, claimed_by = excluded.claimed_by, lease_until = excluded.lease_until\(contentChanged ? """
                        ,
                                failed_runs = 0, first_failed_at = NULL
                        """ : "")
                        WHERE (files.claimed_by IS NULL OR files.claimed_by = excluded.claimed_by OR files.lease_until < \(d.now))\(unlessSynced ? " AND files.status <> \(FileStatus.synced.sql)" : "")
                        RETURNING source, path, destination
                        """, arguments)))
                }
            }
        }
        try update(unique.filter { existing.contains(key($0)) })

        // New rows (or rows another transaction holds locked: left to it).
        let rest = unique.filter { !existing.contains(key($0)) }
        if !rest.isEmpty {
            let (text, arguments) = values(rest)
            taken.formUnion(keys(try db.fetchAll("INSERT INTO files (\(columns)) VALUES \(text) ON CONFLICT (source, path, destination) DO NOTHING RETURNING source, path, destination", arguments)))
        }

        // Rows that were locked by a passing write of another instance, and that nobody holds: recorded anyway.
        let skipped = rest.filter { !taken.contains(key($0)) }
        if !skipped.isEmpty {
            let tuples = Array(repeating: "(?, ?, ?)", count: skipped.count).joined(separator: ", ")
            let free = keys(try db.fetchAll("""
                SELECT source, path, destination FROM files WHERE (source, path, destination) IN (\(tuples))
                    AND (claimed_by IS NULL OR lease_until < \(d.now))
                """, skipped.flatMap { [$0.file.source, $0.file.path, $0.destination] as [any LedgerBindable] }))
            try update(skipped.filter { free.contains(key($0)) })
        }
        return rows.map { taken.contains(key($0)) }
    }
}
