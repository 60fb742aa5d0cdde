import Foundation

extension Ledger {
    // MARK: - Writing

    /// A row to record as pending before its upload starts.
    public struct Pending: Sendable {
        public var file: FileKey
        public var destination: String
        public var size: Int64
        public var modificationTime: Date
        public var sha256: String?
        /// The content changed since the last record: failure history starts afresh.
        public var contentChanged: Bool
        /// The plan expected the file undelivered (new, or a retry): a row another instance has delivered since
        /// is left alone (on a shared ledger).
        public var unlessSynced: Bool
        public init(file: FileKey, destination: String, size: Int64, modificationTime: Date, sha256: String?, contentChanged: Bool, unlessSynced: Bool = false) {
            self.unlessSynced = unlessSynced
            self.file = file
            self.destination = destination
            self.size = size
            self.modificationTime = modificationTime
            self.sha256 = sha256
            self.contentChanged = contentChanged
        }
    }

    /// Records files as `pending` in one transaction (before any of them is uploaded), each claimed by this
    /// instance (``instanceID``) for a lease. Returns, in the order of `rows`, whether each was recorded: on a
    /// shared ledger (PostgreSQL) a row another instance holds under a lease that has not ended is left as it is,
    /// and so is one another instance delivered since it was planned when `unlessSynced` says the plan expected it
    /// undelivered. Those are not this instance's to send (see ``recordPendingShared(_:at:in:)``).
    @discardableResult
    public func recordPending(_ rows: [Pending], at now: Date) async throws -> [Bool] {
        guard !rows.isEmpty else { return [] }
        let start = ContinuousClock.now
        let taken: [Bool] = try await write { [self] db in
            if sharesWork {
                try checkEpochs(Set(rows.map(\.destination)), in: db)
                return try recordPendingShared(rows, at: now, in: db)
            }
            // SQLite: one instance, whose claims never stand in its own way; one prepared statement per row.
            let statement = """
                INSERT INTO files (source, path, destination, status, size, mtime, sha256, queued_at, updated_at, claimed_by, lease_until)
                VALUES (?, ?, ?, \(FileStatus.pending.sql), ?, ?, ?, ?, ?, ?, \(db.dialect.now) + ?)
                ON CONFLICT (source, path, destination) DO UPDATE SET
                    status = \(FileStatus.pending.sql), size = excluded.size, mtime = excluded.mtime, sha256 = excluded.sha256,
                    queued_at = excluded.queued_at, updated_at = excluded.updated_at, bytes_done = 0,
                    removed = NULL, removed_at = NULL, claimed_by = excluded.claimed_by, lease_until = excluded.lease_until,
                    failed_runs = CASE WHEN ? THEN 0 ELSE files.failed_runs END,
                    first_failed_at = CASE WHEN ? THEN NULL ELSE files.first_failed_at END
                """
            let t = now.timeIntervalSince1970
            return try rows.map { row in
                try db.execute(statement, [
                    row.file.source, row.file.path, row.destination, row.size, row.modificationTime.timeIntervalSince1970,
                    row.sha256, t, t, instanceID, leaseSeconds, row.contentChanged, row.contentChanged,
                ]) > 0
            }
        }
        // Renewal matters only where other instances could take an expired row (an SQLite state has one instance).
        if sharesWork {
            leases.fence.confirmFirst(since: start)
            leases.start()
        }
        return taken
    }

    /// Updates metadata of a synced row whose file was touched but holds the same bytes.
    public func refreshMetadata(_ file: FileKey, destination: String, size: Int64, modificationTime: Date, at now: Date) async throws {
        try await write { db in
            try db.execute("UPDATE files SET size = ?, mtime = ?, updated_at = ? WHERE source = ? AND path = ? AND destination = ?",
                           [size, modificationTime.timeIntervalSince1970, now.timeIntervalSince1970, file.source, file.path, destination])
        }
    }

    /// One change to a row, applied with others in one transaction by ``apply(_:)``.
    public enum Update: Sendable {
        /// An attempt starts: `attempts + 1`. Durable before the upload begins where a resend could duplicate
        /// (see ``Destination/resendIsHarmless``).
        case uploading(FileKey, destination: String, at: Date)
        case progress(FileKey, destination: String, bytes: Int64)
        /// A failed attempt that will be retried in this run: keep the error visible while waiting.
        case retryNote(FileKey, destination: String, error: String, at: Date)
        case synced(FileKey, destination: String, receipt: Receipt, size: Int64, modificationTime: Date, sha256: String?, at: Date)
        /// A failure that ends this run's attempts (see ``markFailed(_:destination:failure:retry:at:)``).
        case failed(FileKey, destination: String, failure: DeliveryFailure, retry: RetrySettings, at: Date)
        /// A run stopped before this file's upload ended: it is pending again.
        case interrupted(FileKey, destination: String, at: Date)
        /// The file's destination became unavailable or blocked: the file waits, pending, for a later run. An
        /// attempt cut short by that (`uncount`) is not counted: it was the destination's failure, not the file's.
        case waiting(FileKey, destination: String, uncount: Bool, at: Date)
        /// The file was removed from its source before it was sent (``SourceGone``): pending, its attempt not
        /// counted, with a note saying so. Only a walk marks it removed (``RemovalDetector``, which judges the source
        /// first: a mirror deletes copies of what it marks).
        case gone(FileKey, destination: String, at: Date)

        /// The destination of the row changed.
        var destination: String {
            switch self {
            case .uploading(_, let destination, _), .progress(_, let destination, _), .retryNote(_, let destination, _, _),
                .synced(_, let destination, _, _, _, _, _), .failed(_, let destination, _, _, _), .interrupted(_, let destination, _),
                .waiting(_, let destination, _, _), .gone(_, let destination, _):
                return destination
            }
        }

        /// Whether this change records a file synced (the destination's copy must be durable first).
        public var recordsSynced: Bool {
            if case .synced = self { return true }
            return false
        }
    }

    /// Applies updates in one transaction, with the effect of applying them one by one in order. Blocks the calling
    /// thread: the recorder writes its batches from a queue of its own (``LedgerRecorder``); a task goes through
    /// ``offThread(_:)``.
    ///
    /// An attempt's start directly followed by that file's success (the usual pair in a batch) is written as one
    /// row change: the synced row with the attempt counted. Each row change costs SQLite a primary-key search and
    /// an index update, which is most of a small file's delivery cost.
    public func apply(_ updates: [Update]) throws {
        guard !updates.isEmpty else { return }
        let changes = Ledger.foldingAttemptStarts(updates)
        let onlyProgress = updates.allSatisfy { if case .progress = $0 { true } else { false } }
        try blockingWrite(notify: !onlyProgress) { db in
            try checkEpochs(Set(updates.map(\.destination)), in: db)
            try Ledger.applyGrouped(changes, in: db, claimant: instanceID)
        }
    }

    /// The updates in order, each `.uploading` that is followed, for the same row, directly by `.synced` left out
    /// and its start time handed to that `.synced`.
    static func foldingAttemptStarts(_ updates: [Update]) -> [(update: Update, attemptStartedAt: Date?)] {
        struct Row: Hashable {
            let file: FileKey
            let destination: String
        }
        var changes: [(update: Update, attemptStartedAt: Date?)?] = []
        changes.reserveCapacity(updates.count)
        var openAttempt: [Row: Int] = [:]  // the index in `changes` of a row's start not yet followed by anything
        for update in updates {
            var startedAt: Date? = nil
            switch update {
            case .uploading(let file, let destination, _):
                openAttempt[Row(file: file, destination: destination)] = changes.count
            case .synced(let file, let destination, _, _, _, _, _):
                if let open = openAttempt.removeValue(forKey: Row(file: file, destination: destination)),
                   case .uploading(_, _, let at)? = changes[open]?.update {
                    startedAt = at
                    changes[open] = nil
                }
            case .progress(let file, let destination, _), .retryNote(let file, let destination, _, _),
                .failed(let file, let destination, _, _, _), .interrupted(let file, let destination, _),
                .waiting(let file, let destination, _, _), .gone(let file, let destination, _):
                openAttempt[Row(file: file, destination: destination)] = nil
            }
            changes.append((update, startedAt))
        }
        return changes.compactMap { $0 }
    }

    public func markUploading(_ file: FileKey, destination: String, at now: Date) async throws {
        try await offThread { try self.apply([.uploading(file, destination: destination, at: now)]) }
    }

    /// Blocks the calling thread, as ``apply(_:)`` does.
    public func markProgress(_ file: FileKey, destination: String, bytes: Int64) throws {
        try apply([.progress(file, destination: destination, bytes: bytes)])
    }

    public func markSynced(_ file: FileKey, destination: String, receipt: Receipt, size: Int64, modificationTime: Date, sha256: String?, at now: Date) async throws {
        try await offThread { try self.apply([.synced(file, destination: destination, receipt: receipt, size: size, modificationTime: modificationTime, sha256: sha256, at: now)]) }
    }

    /// Records a failure that ends this run's attempts. A retryable one gets its next retry time from the number of
    /// runs it has failed in (growing up to `max_retry_interval`, none after `give_up_after`); a permanent one is
    /// not retried automatically.
    public func markFailed(_ file: FileKey, destination: String, failure: DeliveryFailure, retry: RetrySettings, at now: Date) async throws {
        try await offThread { try self.apply([.failed(file, destination: destination, failure: failure, retry: retry, at: now)]) }
    }

    /// One encoder for every receipt (making one per row cost more than the encoding).
    static let receiptEncoder = JSONEncoder()

    /// Applies one update; a `.synced` with `attemptStartedAt` also counts the attempt that started then (what its
    /// `.uploading` would have written).
    ///
    /// An outcome (synced, failed, interrupted, waiting) releases the row's claim; on a shared ledger it, and an
    /// attempt's start, are written only to a row that `claimant` still holds, or that nobody holds and that is not
    /// synced: a row whose lease ended and that another instance took is that one's now, and a synced row nobody
    /// holds was delivered (by another instance, maybe): an instance that was frozen or cut off past its lease must
    /// not set it back.
    static func apply(_ update: Update, in db: any LedgerConnection, attemptStartedAt: Date? = nil, claimant: String) throws {
        let release = "claimed_by = NULL, lease_until = NULL"
        // On SQLite (one instance) every row is the instance's own, whoever claimed it last: the same statement
        // with a condition that always holds.
        let mine = stillHeld(db.dialect)
        switch update {
        case .uploading(let file, let destination, let now):
            try db.execute("""
                UPDATE files SET status = \(FileStatus.uploading.sql), attempts = attempts + 1, last_attempt_at = ?, bytes_done = 0, updated_at = ?
                WHERE source = ? AND path = ? AND destination = ? AND \(mine)
                """, [now.timeIntervalSince1970, now.timeIntervalSince1970, file.source, file.path, destination, claimant])
        case .progress(let file, let destination, let bytes):
            try db.execute("UPDATE files SET bytes_done = ? WHERE source = ? AND path = ? AND destination = ?", [bytes, file.source, file.path, destination])
        case .retryNote(let file, let destination, let error, let now):
            try db.execute("UPDATE files SET last_error = ?, updated_at = ? WHERE source = ? AND path = ? AND destination = ?", [Redactor.shared.redact(error), now.timeIntervalSince1970, file.source, file.path, destination])
        case .synced(let file, let destination, let receipt, let size, let modificationTime, let sha256, let now):
            let receiptText = String(decoding: try Ledger.receiptEncoder.encode(receipt), as: UTF8.self)
            // Without a folded attempt start, `attempts + ?` adds 0 and `COALESCE(?, last_attempt_at)` keeps the column.
            try db.execute("""
                UPDATE files SET status = \(FileStatus.synced.sql), last_error = NULL, error_class = NULL, error_code = NULL,
                    next_retry_at = NULL, failed_runs = 0, first_failed_at = NULL, size = ?, mtime = ?, sha256 = ?,
                    receipt = ?, bytes_done = ?, synced_at = ?, updated_at = ?,
                    attempts = attempts + ?, last_attempt_at = COALESCE(?, last_attempt_at), \(release)
                WHERE source = ? AND path = ? AND destination = ? AND \(mine)
                """, [size, modificationTime.timeIntervalSince1970, sha256, Redactor.shared.redact(receiptText), size,
                                         now.timeIntervalSince1970, now.timeIntervalSince1970,
                                         attemptStartedAt == nil ? 0 : 1, attemptStartedAt?.timeIntervalSince1970,
                                         file.source, file.path, destination, claimant])
        case .failed(let file, let destination, let failure, let retry, let now):
            let row = try db.fetchOne("SELECT failed_runs, first_failed_at FROM files WHERE source = ? AND path = ? AND destination = ?",
                                      [file.source, file.path, destination])
            let failedRuns = (row?.int(0) ?? 0) + 1
            let firstFailed = row?.double(1) ?? now.timeIntervalSince1970
            let next = RetryPolicy(settings: retry).nextRun(
                after: failure, failedRuns: failedRuns, firstFailedAt: Date(timeIntervalSince1970: firstFailed), now: now)
            try db.execute("""
                UPDATE files SET status = \(FileStatus.failed.sql), last_error = ?, error_class = ?, error_code = ?, next_retry_at = ?,
                    failed_runs = ?, first_failed_at = ?, bytes_done = 0, updated_at = ?, \(release)
                WHERE source = ? AND path = ? AND destination = ? AND \(mine)
                """, [Redactor.shared.redact(failure.message), failure.failureClass.name,
                                         failure.code.map(Redactor.shared.redactCode), next?.timeIntervalSince1970, failedRuns, firstFailed, now.timeIntervalSince1970,
                                         file.source, file.path, destination, claimant])
        case .waiting(let file, let destination, let uncount, let now):
            try db.execute("""
                UPDATE files SET status = \(FileStatus.pending.sql), attempts = CASE WHEN attempts > ? THEN attempts - ? ELSE 0 END, bytes_done = 0, updated_at = ?, \(release)
                WHERE source = ? AND path = ? AND destination = ? AND status != \(FileStatus.synced.sql) AND \(mine)
                """, [uncount ? 1 : 0, uncount ? 1 : 0, now.timeIntervalSince1970, file.source, file.path, destination, claimant])
        case .gone(let file, let destination, let now):
            try db.execute("""
                UPDATE files SET status = \(FileStatus.pending.sql), attempts = CASE WHEN attempts > 1 THEN attempts - 1 ELSE 0 END, bytes_done = 0,
                    last_error = ?, error_class = NULL, error_code = ?, updated_at = ?, \(release)
                WHERE source = ? AND path = ? AND destination = ? AND status != \(FileStatus.synced.sql) AND \(mine)
                """, [SourceGone.note, SourceGone.code, now.timeIntervalSince1970, file.source, file.path, destination, claimant])
        case .interrupted(let file, let destination, let now):
            try db.execute("UPDATE files SET status = \(FileStatus.pending.sql), bytes_done = 0, updated_at = ?, \(release) WHERE source = ? AND path = ? AND destination = ? AND status != \(FileStatus.synced.sql) AND \(mine)", [now.timeIntervalSince1970, file.source, file.path, destination, claimant])
        }
    }

    /// The condition of ``apply(_:in:attemptStartedAt:claimant:)`` on a row, with one `?` for the claimant: on a
    /// shared ledger, held by the claimant, or held by nobody and not synced; on SQLite (one instance, every row its
    /// own whoever claimed it last) a condition that always holds. `table`: the qualifier of the columns.
    static func stillHeld(_ dialect: SQLDialect, table: String = "") -> String {
        dialect.isPostgres ? "(\(table)claimed_by = ? OR (\(table)claimed_by IS NULL AND \(table)status <> \(FileStatus.synced.sql)))" : "(? IS NOT NULL)"
    }

    /// Rows left `uploading` by a run that died are `pending` again, and claims of instances that are gone are
    /// dropped. Returns how many rows were set back. On a shared ledger (PostgreSQL) only rows whose lease ended, or
    /// that this instance held, are touched: another instance's uploads in flight are its own. On SQLite (one
    /// instance at a time) every such row is.
    @discardableResult
    public func resetInterrupted(at now: Date) async throws -> Int {
        try await resetInterruptedTakingOver(at: now).reset
    }

    /// ``resetInterrupted(at:)``, also returning the files whose rows it freed from instances that are gone (a
    /// shared ledger), read in the same transaction. The caller plans them by their paths, whatever its share of
    /// the fleet's walk: the instances whose share holds them find no expired claim left, and do not walk again.
    public func resetInterruptedTakingOver(at now: Date) async throws -> (reset: Int, freed: [FileKey]) {
        try await write { [self] db in
            var freed = Set<FileKey>()
            let free = sharesWork ? " AND (claimed_by IS NULL OR claimed_by = ? OR lease_until < \(db.dialect.now))" : ""
            let arguments: [any LedgerBindable] = sharesWork ? [instanceID] : []
            if sharesWork {
                // Rows still to be sent that a gone instance held: it may have sent them (see ``TakenOverRows``).
                try db.forEachRow("""
                    SELECT source, path, destination FROM files
                    WHERE claimed_by IS NOT NULL AND claimed_by <> ? AND lease_until < \(db.dialect.now) AND status <> \(FileStatus.synced.sql)
                    """, [instanceID]) { row in
                    let key = FileKey(source: row.string(0) ?? "", path: row.string(1) ?? "")
                    takenOver.add(key, destination: row.string(2) ?? "")
                    freed.insert(key)
                }
            }
            let reset = try db.execute("UPDATE files SET status = \(FileStatus.pending.sql), bytes_done = 0, updated_at = ?, claimed_by = NULL, lease_until = NULL WHERE status = \(FileStatus.uploading.sql)\(free)",
                                       [now.timeIntervalSince1970 as any LedgerBindable] + arguments)
            try db.execute("UPDATE files SET claimed_by = NULL, lease_until = NULL WHERE claimed_by IS NOT NULL\(free)", arguments)
            return (reset, freed.sorted())
        }
    }

    /// Drops this instance's claims on the rows of `destination` (its run there has ended: what it did not send is
    /// free for any instance).
    public func releaseClaims(destination: String) async throws {
        try await write(notify: false) { [self] db in
            try db.execute("UPDATE files SET claimed_by = NULL, lease_until = NULL WHERE claimed_by = ? AND destination = ?", [instanceID, destination])
        }
    }

    /// What other instances hold of the rows of `destinations` (all when empty): how many claims whose lease still
    /// runs, and how many whose lease ended (their holder is gone: the rows are free to take).
    public func othersClaims(destinations: Set<String> = []) async throws -> (live: Int, expired: Int) {
        try await read { [self] db in
            var live = 0, expired = 0
            try db.forEachRow("SELECT destination, CASE WHEN lease_until < \(db.dialect.now) THEN 1 ELSE 0 END FROM files WHERE claimed_by IS NOT NULL AND claimed_by <> ?",
                              [instanceID]) { row in
                guard destinations.isEmpty || destinations.contains(row.string(0) ?? "") else { return }
                if row.int(1) == 1 { expired += 1 } else { live += 1 }
            }
            return (live, expired)
        }
    }

    /// Makes failed rows (of a destination, of some paths) due now, whatever their class or age (`syncgate retry`).
}
