import Foundation

extension Ledger {
    @discardableResult
    public func requestRetry(destination: String?, paths: [String], at now: Date) async throws -> Int {
        try await changeFailed(
            "UPDATE files SET status = \(FileStatus.pending.sql), next_retry_at = NULL, first_failed_at = NULL, failed_runs = 0, updated_at = ?",
            [now.timeIntervalSince1970], destination: destination, paths: paths)
    }

    /// Drops failed rows (of a destination, of some paths). The files are then new to the next run.
    @discardableResult
    public func forgetFailed(destination: String?, paths: [String]) async throws -> Int {
        try await changeFailed("DELETE FROM files", [], destination: destination, paths: paths)
    }

    /// Runs `statement` on the failed rows of a destination (all when nil) and paths (all when empty).
    private func changeFailed(_ statement: String, _ leading: [any LedgerBindable], destination: String?, paths: [String]) async throws -> Int {
        try await write { [self] db in
            var sql = statement + " WHERE status = \(FileStatus.failed.sql)"
            var arguments = leading
            if let destination {
                sql += " AND destination = ?"
                arguments.append(destination)
            }
            if !paths.isEmpty {
                sql += " AND path IN (\(paths.map { _ in "?" }.joined(separator: ",")))"
                arguments.append(contentsOf: paths)
            }
            let changed = try db.executeOnce(sql, arguments)
            try database.noteChange(db)
            return changed
        }
    }
    /// Drops the rows of files stored under these remote names at a destination (after `syncgate rm`), so that a
    /// file still in a source is sent again.
    public func forgetRemote(destination: String, remoteNames: [String]) async throws {
        let names = Set(remoteNames)
        let rows = try await entries(destination: destination).filter { names.contains($0.receipt?.remoteName ?? $0.file.path) }
        try await write { [self] db in
            for row in rows {
                try db.execute("DELETE FROM files WHERE source = ? AND path = ? AND destination = ?",
                               [row.file.source, row.file.path, destination])
            }
            try database.noteChange(db)
        }
    }
}
