import Foundation

extension Ledger {
    /// What ``noteTarget(_:_:at:)`` found and did.
    public enum TargetNote: Sendable, Equatable {
        /// None was recorded (a new ledger, or one from before schema 9): this one is, and nothing else changes.
        case first
        /// The same as recorded.
        case same
        /// Another was recorded (`was`, as it was described): the rows synced there were made pending again.
        case changed(was: String, marked: Int)
        /// Another was recorded by another instance that is still alive on this shared ledger: the two configs
        /// disagree, and nothing was changed (either would undo the other at every run).
        case disagreement(was: String, by: String)
    }

    /// The digests of where each destination's copies went, as recorded (schema 9).
    public func recordedTargetDigests() async throws -> [String: String] {
        try await read { db in
            var digests: [String: String] = [:]
            for row in try db.fetchAll("SELECT destination, digest FROM destination_targets", []) {
                if let name = row.string(0), let digest = row.string(1) { digests[name] = digest }
            }
            return digests
        }
    }

    /// Compares `target` with the one recorded for `destination` and records it. When another was recorded, the
    /// destination now points somewhere that holds none of what the ledger says it holds: its rows recorded synced
    /// (of files still in their sources) are made pending, in the same transaction, with a note saying why, and no
    /// row is left saying its copy was delivered there (what `delete_remote` deletes); their attempts stay counted, so a destination that can look for a copy cheaply (S3, a plugin's `exists`) looks
    /// before it sends (``DestinationRun/outcomeUnknown(_:instanceID:)``). On a shared ledger, a target recorded by
    /// another live instance is left alone (``TargetNote/disagreement(was:by:)``).
    public func noteTarget(_ destination: String, _ target: DestinationTarget, at now: Date) async throws -> TargetNote {
        let me = instanceID
        let shared = sharesWork
        return try await write { [self] db in
            let d = db.dialect
            let row = try db.fetchOne(
                "SELECT digest, description, recorded_by FROM destination_targets WHERE destination = ?\(d.isPostgres ? " FOR UPDATE" : "")",
                [destination])
            let digest = target.digest
            if let row, row.string(0) == digest { return .same }
            let was = row?.string(1) ?? ""
            if shared, let row, let by = row.string(2), by != me,
               try db.fetchOne("SELECT 1 FROM instances WHERE id = ? AND left_at IS NULL AND alive_until >= \(d.now)", [by]) != nil {
                return .disagreement(was: was, by: by)
            }
            var marked = 0
            if row != nil {
                let note = "the destination now points at \(target.description) (it was \(was)): sent again"
                // Nothing is delivered at the new place: no row says so (`synced_at` cleared), so that `delete_remote`
                // never deletes there a name syncgate did not write, neither for a file whose removal was still to be
                // carried out at the old place (its copy stays there) nor for one removed before it is sent again.
                marked = try db.execute("""
                    UPDATE files SET status = \(FileStatus.pending.sql), synced_at = NULL, last_error = ?, updated_at = ?
                    WHERE destination = ? AND status = \(FileStatus.synced.sql) AND removed IS NULL
                    """, [Redactor.shared.redact(note), now.timeIntervalSince1970, destination])
                try db.execute("""
                    UPDATE files SET synced_at = NULL, updated_at = ?
                    WHERE destination = ? AND removed = '\(Removal.source.rawValue)' AND synced_at IS NOT NULL
                    """, [now.timeIntervalSince1970, destination])
            }
            try db.execute("""
                INSERT INTO destination_targets (destination, digest, description, recorded_at, recorded_by) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (destination) DO UPDATE SET digest = excluded.digest, description = excluded.description,
                    recorded_at = excluded.recorded_at, recorded_by = excluded.recorded_by
                """, [destination, digest, Redactor.shared.redact(target.description), now.timeIntervalSince1970, me])
            if marked > 0 { try database.noteChange(db) }
            return row == nil ? .first : .changed(was: was, marked: marked)
        }
    }
}
