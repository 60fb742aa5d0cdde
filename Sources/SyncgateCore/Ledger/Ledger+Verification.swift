import Foundation

/// What `syncgate check` reads and writes (``Verifier``): the destination's rows compared one at a time, rows marked
/// pending again, and the last verification per destination (table `verifications`, schema 8).
extension Ledger {
    /// Rows marked pending per transaction by ``markForResend(destination:findings:at:)``.
    static let resendRowsPerTransaction = 500

    /// Hands every row of `destination` (receipt included) to `index`, in key order, on the ledger's threads:
    /// nothing but the comparison's findings is held beside the listing.
    func compare(_ index: ListingIndex, destination: String) async throws -> ListingIndex {
        try await offThread { [self] in
            var index = index
            try withRows(where: { "\($0.unindexed("destination")) = ?" }, [destination], columns: Ledger.columns) { stream in
                while let entry = stream.entry() {
                    index.compare(entry)
                    try stream.advance()
                }
            }
            return index
        }
    }

    /// The sources that have rows for `destination` (``VerificationRowCursor`` reads each one's rows in path order).
    func sources(withRowsFor destination: String) async throws -> [String] {
        try await read { db in
            try db.fetchAll("SELECT DISTINCT source FROM files WHERE destination = ?", [destination]).compactMap { $0.string(0) }
        }
    }

    /// At most `limit` rows of `destination` fed by `source` whose path comes after `path` (from the first when nil),
    /// in path order, receipts included: one short read per page, along the primary key.
    func rows(of destination: String, source: String, after path: String?, limit: Int) async throws -> [LedgerEntry] {
        try await read { db in
            let after = path == nil ? "" : " AND path > ?"
            let sql = """
                SELECT \(Ledger.columns) FROM files WHERE source = ?\(after) AND \(db.dialect.unindexed("destination")) = ?
                ORDER BY source, path, destination LIMIT \(limit)
                """
            return try db.fetchAll(sql, [source] + (path.map { [$0] } ?? []) + [destination]).map(Ledger.entry)
        }
    }

    /// Marks the rows of missing and different copies among `findings` pending again (only rows still synced: a
    /// row that changed meanwhile is left alone), with a note of why, so that the next sync (or a running gateway, at
    /// once) sends them again. Deletes nothing. Returns how many rows it marked.
    public func markForResend(destination: String, findings: [VerificationFinding], at now: Date) async throws -> Int {
        let rows: [(FileKey, String)] = findings.compactMap { finding in
            guard let file = finding.file else { return nil }
            switch finding.kind {
            case .missing: return (file, "syncgate check: the copy was missing at the destination")
            case .different: return (file, "syncgate check: the copy at the destination was different (\(finding.detail))")
            case .extra, .error: return nil
            }
        }
        var marked = 0
        var start = 0
        while start < rows.count {
            let batch = Array(rows[start..<min(start + Ledger.resendRowsPerTransaction, rows.count)])
            start += batch.count
            marked += try await write { [self] db in
                var changed = 0
                for (file, note) in batch {
                    changed += try db.execute("""
                        UPDATE files SET status = \(FileStatus.pending.sql), last_error = ?, updated_at = ?
                        WHERE source = ? AND path = ? AND destination = ? AND status = \(FileStatus.synced.sql)
                        """, [Redactor.shared.redact(note), now.timeIntervalSince1970, file.source, file.path, destination])
                }
                try database.noteChange(db)
                return changed
            }
        }
        return marked
    }

    /// Records a destination's last verification (replacing the one before).
    public func recordVerification(_ record: VerificationRecord) async throws {
        try await write { db in
            try db.execute("""
                INSERT INTO verifications (destination, verified_at, checked, missing, different, extra, errors, repaired)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (destination) DO UPDATE SET verified_at = excluded.verified_at, checked = excluded.checked,
                    missing = excluded.missing, different = excluded.different, extra = excluded.extra,
                    errors = excluded.errors, repaired = excluded.repaired
                """, [record.destination, record.verifiedAt.timeIntervalSince1970, record.checked, record.missing,
                      record.different, record.extra, record.errors, record.repaired])
        }
    }

    /// The last verification of every destination that has one, by name.
    public func verifications() async throws -> [String: VerificationRecord] {
        try await read { db in
            var result: [String: VerificationRecord] = [:]
            for row in try db.fetchAll(
                "SELECT destination, verified_at, checked, missing, different, extra, errors, repaired FROM verifications", [])
            {
                guard let destination = row.string(0), let at = row.double(1) else { continue }
                result[destination] = VerificationRecord(
                    destination: destination, verifiedAt: Date(timeIntervalSince1970: at), checked: row.int(2) ?? 0,
                    missing: row.int(3) ?? 0, different: row.int(4) ?? 0, extra: row.int(5) ?? 0, errors: row.int(6) ?? 0,
                    repaired: row.int(7) ?? 0)
            }
            return result
        }
    }
}
