import Foundation

extension Ledger {
    // MARK: - Files gone from their source

    /// Marks the rows of these files (at every destination) gone from their source, unless already marked.
    /// Returns how many files had a row marked.
    @discardableResult
    public func markRemoved(_ files: [FileKey], at now: Date) throws -> Int {
        guard !files.isEmpty else { return 0 }
        return try blockingWrite { db in
            // The note of an upload that found the file gone (``SourceGone``) has served: the mark says it now.
            let statement = """
                UPDATE files SET removed = 'source', removed_at = ?, updated_at = ?,
                    last_error = CASE WHEN error_code = '\(SourceGone.code)' THEN NULL ELSE last_error END,
                    error_code = CASE WHEN error_code = '\(SourceGone.code)' THEN NULL ELSE error_code END
                WHERE source = ? AND path = ? AND removed IS NULL
                """
            var changed = 0
            for file in files {
                if try db.execute(statement, [now.timeIntervalSince1970, now.timeIntervalSince1970, file.source, file.path]) > 0 { changed += 1 }
            }
            return changed
        }
    }

    /// These files are in their source again: their marks go. A row whose copy syncgate deleted keeps its mark
    /// until the file is recorded pending again (``recordPending(_:at:)`` clears it), since it must be sent again.
    /// A `moved` mark goes too: the caller has made sure the file is there while no move is under way (see
    /// ``RemovalDetector``), so it was put back, or a crash came between its mark and its unlink. On a shared ledger
    /// another instance's mover may be between its mark and its unlink right now (the caller's lock is per
    /// process): a `moved` mark goes only once it is older than a lease at `now` (the walk's time, on the clock
    /// the marks were written by).
    public func clearRemoved(_ files: [FileKey], at now: Date = Date()) throws {
        guard sharesWork else { return try clearMarks(files, of: "'source', 'remote-kept', 'moved'") }
        try clearMarks(files, of: "'source', 'remote-kept'")
        try clearMarks(files, of: "'moved'", markedBefore: now.addingTimeInterval(-leaseSeconds))
    }

    /// Files marked `moved` that were not deleted after all (changed meanwhile, or not deletable): unmarked.
    public func clearMoved(_ files: [FileKey]) throws {
        try clearMarks(files, of: "'moved'")
    }

    private func clearMarks(_ files: [FileKey], of kinds: String, markedBefore: Date? = nil) throws {
        guard !files.isEmpty else { return }
        try blockingWrite { db in
            let statement = """
                UPDATE files SET removed = NULL, removed_at = NULL WHERE source = ? AND path = ? AND removed IN (\(kinds))\(markedBefore == nil ? "" : " AND removed_at < ?")
                """
            for file in files {
                var arguments: [any LedgerBindable] = [file.source, file.path]
                if let markedBefore { arguments.append(markedBefore.timeIntervalSince1970) }
                try db.execute(statement, arguments)
            }
        }
    }

    /// Marks the rows of files about to be deleted from their source `moved`, durably (the write-ahead log is
    /// flushed to disk before this returns): a file is deleted only once this mark, and so every `synced` before
    /// it, would survive a power cut.
    public func markMoved(_ files: [FileKey], at now: Date) throws {
        guard !files.isEmpty else { return }
        try blockingDurably { db in
            let statement = """
                UPDATE files SET removed = 'moved', removed_at = ?, updated_at = ? WHERE source = ? AND path = ?
                """
            for file in files {
                try db.execute(statement, [now.timeIntervalSince1970, now.timeIntervalSince1970, file.source, file.path])
            }
        }
    }

    /// Rows of a destination whose file is gone from its source while a copy may still be there (it was delivered
    /// once): what `delete_remote` deletes. Receipts included (the name the copy was stored under).
    public func remoteDeletions(destination: String) async throws -> [LedgerEntry] {
        try await read { db in
            try db.fetchAll("""
                SELECT \(Ledger.columns) FROM files WHERE destination = ? AND removed = 'source' AND synced_at IS NOT NULL
                ORDER BY source, path
                """, [destination]).map(Ledger.entry)
        }
    }

    /// Records what `delete_remote` did with a row's copy (``Removal/remoteDeleted`` or ``Removal/remoteKept``);
    /// the row is dropped `recent.completed` later.
    public func noteRemoteRemoval(_ files: [FileKey], destination: String, how: Removal, at now: Date) async throws {
        guard !files.isEmpty else { return }
        try await write { db in
            let statement = """
                UPDATE files SET removed = ?, removed_at = ?, updated_at = ? WHERE source = ? AND path = ? AND destination = ? AND removed = 'source'
                """
            for file in files {
                try db.execute(statement, [how.rawValue, now.timeIntervalSince1970, now.timeIntervalSince1970, file.source, file.path, destination])
            }
        }
    }

    /// Drops a destination's rows marked removed before `before`, except, with `keepingDeletions`, those whose copy
    /// `delete_remote` has still to delete. Returns how many.
    @discardableResult
    public func dropRemoved(destination: String, before: Date, keepingDeletions: Bool) async throws -> Int {
        try await write(notify: false) { db in
            try db.execute("""
                DELETE FROM files WHERE destination = ? AND removed IS NOT NULL AND removed_at < ?
                    AND NOT (? AND removed = 'source' AND synced_at IS NOT NULL)
                """, [destination, before.timeIntervalSince1970, keepingDeletions])
        }
    }

    /// The rows of one source's files that are still there, in key order, as a stream (see ``withRows(destination:_:)``).
    public func withPresentRows<T>(source: String, _ body: (LedgerRowStream) throws -> T) throws -> T {
        try withRows(where: { _ in "source = ? AND removed IS NULL" }, [source], body)
    }

    /// Rows marked removed per destination (still in the ledger: `status` shows them apart).
    public func removedCounts() async throws -> [String: Int] {
        try await read { db in
            var result: [String: Int] = [:]
            for row in try db.fetchAll("SELECT destination, COUNT(*) AS n FROM files WHERE removed IS NOT NULL GROUP BY destination", []) {
                if let destination = row.string(0) { result[destination] = row.int(1) ?? 0 }
            }
            return result
        }
    }
}
