import Foundation

extension Ledger {
    // MARK: - What a mirror's judgement rests on (schema 6)

    /// Every source's root as its last complete, accepted walk found it, by source name (a source never walked to
    /// its end has none).
    public func sourceRoots() throws -> [String: SourceRoot] {
        try blockingRead { db in
            var result: [String: SourceRoot] = [:]
            for row in try db.fetchAll("SELECT source, device, inode, files, walked_at FROM source_roots", []) {
                let root = SourceRoot(source: row.string(0) ?? "", device: row.string(1) ?? "", inode: row.string(2) ?? "",
                                      files: row.int(3) ?? 0, walkedAt: Date(timeIntervalSince1970: row.double(4) ?? 0))
                result[root.source] = root
            }
            return result
        }
    }

    /// Records a source's root (its identity and the files a complete walk found), replacing what was recorded.
    public func recordSourceRoot(_ root: SourceRoot) throws {
        try blockingWrite { db in
            try db.execute("""
                INSERT INTO source_roots (source, device, inode, files, walked_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (source) DO UPDATE SET device = excluded.device, inode = excluded.inode, files = excluded.files,
                    walked_at = excluded.walked_at
                """, [root.source, root.device, root.inode, root.files, root.walkedAt.timeIntervalSince1970])
        }
    }

    /// Records that `count` copies were deleted at a destination at `now` (a batch of `delete_remote`), and drops the
    /// records of that destination older than `window` before `now`.
    public func noteRemoteDeletions(_ count: Int, destination: String, at now: Date, window: TimeInterval) async throws {
        try await write { db in
            try db.execute("DELETE FROM remote_deletions WHERE destination = ? AND deleted_at < ?",
                           [destination, now.timeIntervalSince1970 - window])
            guard count > 0 else { return }
            // Keyed by (destination, deleted_at): two batches at the same moment add up.
            try db.execute("""
                INSERT INTO remote_deletions (destination, deleted_at, count) VALUES (?, ?, ?)
                ON CONFLICT (destination, deleted_at) DO UPDATE SET count = remote_deletions.count + excluded.count
                """, [destination, now.timeIntervalSince1970, count])
        }
    }

    /// How many copies were deleted at a destination in the `window` before `now`.
    public func remoteDeletions(destination: String, within window: TimeInterval, before now: Date) async throws -> Int {
        try await read { db in
            // Summed here: the rows of one window are few, and SUM's type differs between the engines.
            try db.fetchAll("SELECT count FROM remote_deletions WHERE destination = ? AND deleted_at >= ?",
                            [destination, now.timeIntervalSince1970 - window]).reduce(0) { $0 + ($1.int(0) ?? 0) }
        }
    }
}
