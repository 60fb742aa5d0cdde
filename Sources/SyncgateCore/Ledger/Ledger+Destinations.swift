import Foundation

extension Ledger {
    /// Every destination's record, by name (destinations never tried have none: they count as available).
    public func destinationRecords() async throws -> [String: DestinationRecord] {
        try await read { db in
            var result: [String: DestinationRecord] = [:]
            for row in try db.fetchAll("""
                SELECT name, state, since, last_error, error_code, failed_probes, next_probe_at, fingerprint, last_seen_at,
                    retry_after_until
                FROM destinations
                """, [])
            {
                let record = DestinationRecord(
                    name: row.string(0) ?? "", state: row.string(1).flatMap(DestinationState.init(rawValue:)) ?? .available,
                    since: Date(timeIntervalSince1970: row.double(2) ?? 0),
                    lastError: row.string(3), errorCode: row.string(4), failedProbes: row.int(5) ?? 0,
                    nextProbeAt: row.double(6).map { Date(timeIntervalSince1970: $0) }, fingerprint: row.string(7),
                    lastSeenAt: row.double(8).map { Date(timeIntervalSince1970: $0) },
                    retryAfterUntil: row.double(9).map { Date(timeIntervalSince1970: $0) })
                result[record.name] = record
            }
            return result
        }
    }

    /// Records that a destination answered. When it was unavailable or blocked, the failure clocks of its failed
    /// files move on by the time it was away: `give_up_after` counts only time in which the destination was
    /// reachable and refused the file.
    public func markAvailable(_ name: String, at now: Date) async throws {
        try await write { db in
            let previous = try db.fetchOne("SELECT state, since FROM destinations WHERE name = ?", [name])
            let t = now.timeIntervalSince1970
            if let previous, previous.string(0) != DestinationState.available.rawValue {
                let away = max(0, t - (previous.double(1) ?? t))
                try db.execute("""
                    UPDATE files SET first_failed_at = first_failed_at + ?
                    WHERE destination = ? AND status = \(FileStatus.failed.sql) AND first_failed_at IS NOT NULL
                    """, [away, name])
            }
            if let previous, previous.string(0) == DestinationState.available.rawValue {
                try db.execute("UPDATE destinations SET last_seen_at = ?, updated_at = ? WHERE name = ?", [t, t, name])
                return
            }
            try db.execute("""
                INSERT INTO destinations (name, state, since, last_seen_at, updated_at) VALUES (?, 'available', ?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET state = 'available', since = excluded.since, last_error = NULL,
                    error_code = NULL, failed_probes = 0, next_probe_at = NULL, fingerprint = NULL, retry_after_until = NULL,
                    last_seen_at = excluded.last_seen_at, updated_at = excluded.updated_at
                """, [name, t, t, t])
        }
    }

    /// Records that a destination is unavailable or blocked (`state`), with the error that says why. A destination
    /// already in that state keeps its `since`; `probeFailed` counts one more probe that found it away, which
    /// spaces the next one further (``RetryPolicy/probeInterval(failedProbes:maximum:)``: 2 s doubling up to `probeIntervalMax`). `retryAfter`, the destination's own
    /// Retry-After, holds every later run off until it has passed (``DestinationRecord/retryAfterUntil``), and the
    /// next probe with them.
    public func markAway(_ name: String, state: DestinationState, error: String, code: String?, fingerprint: String?,
                         probeFailed: Bool, probeIntervalMax: Duration, retryAfter: Duration? = nil, at now: Date) async throws {
        precondition(state != .available, "markAvailable records a destination that answered")
        try await write { db in
            let t = now.timeIntervalSince1970
            let previous = try db.fetchOne("SELECT state, since, failed_probes FROM destinations WHERE name = ?", [name])
            let same = previous.map { $0.string(0) == state.rawValue } ?? false
            let since = same ? (previous?.double(1) ?? t) : t
            let probes = (same ? (previous?.int(2) ?? 0) : 0) + (probeFailed ? 1 : 0)
            let until: Double? = retryAfter.map { t + $0.seconds }
            let next = max(t + RetryPolicy.probeInterval(failedProbes: probes, maximum: probeIntervalMax).seconds, until ?? 0)
            try db.execute("""
                INSERT INTO destinations (name, state, since, last_error, error_code, failed_probes, next_probe_at, fingerprint,
                    retry_after_until, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET state = excluded.state, since = excluded.since,
                    last_error = excluded.last_error, error_code = excluded.error_code,
                    failed_probes = excluded.failed_probes, next_probe_at = excluded.next_probe_at,
                    fingerprint = excluded.fingerprint, retry_after_until = excluded.retry_after_until, updated_at = excluded.updated_at
                """, [name, state.rawValue, since, Redactor.shared.redact(error), code.map(Redactor.shared.redactCode), probes, next, fingerprint, until, t])
        }
    }

    /// Makes blocked destinations (one, or all when nil) be tried again by the next run, whatever their settings
    /// (`syncgate retry`). Returns how many were blocked.
    @discardableResult
    public func unblock(destination: String?, at now: Date) async throws -> Int {
        try await write { [self] db in
            var sql = "UPDATE destinations SET fingerprint = NULL, next_probe_at = ?, updated_at = ? WHERE state = 'blocked'"
            var arguments: [any LedgerBindable] = [now.timeIntervalSince1970, now.timeIntervalSince1970]
            if let destination {
                sql += " AND name = ?"
                arguments.append(destination)
            }
            let changed = try db.execute(sql, arguments)
            try database.noteChange(db)
            return changed
        }
    }

    /// The earliest automatic retry of a failed file at a destination (nil: none scheduled).
    public func nextRetryDue(destination: String) async throws -> Date? {
        try await read { db in
            try db.fetchOne("SELECT MIN(next_retry_at) FROM files WHERE destination = ? AND status = \(FileStatus.failed.sql) AND next_retry_at IS NOT NULL AND removed IS NULL",
                            [destination])?.double(0).map { Date(timeIntervalSince1970: $0) }
        }
    }

    /// A number that changes whenever another connection (another syncgate process: `retry`, `forget`) commits a
    /// change to the ledger (SQLite's `data_version`; on PostgreSQL a count of such changes kept in the ledger): a
    /// gateway looks at it to act on such changes at once.
    public func changeCounter() async throws -> Int {
        try await offThread { [database] in try database.changeCounter() }
    }

    // MARK: - Runs

    /// When the last run started and ended, and its exit code (nil before the first run).
    public struct RunRecord: Sendable, Hashable {
        public var startedAt: Date
        public var finishedAt: Date?
        public var exitCode: Int?
    }

    public func noteRunStarted(at now: Date) async throws {
        try await setMeta(["last_run_started_at": String(now.timeIntervalSince1970)], clearing: ["last_run_finished_at", "last_run_exit"])
    }

    public func noteRunFinished(at now: Date, exitCode: Int32) async throws {
        try await setMeta(["last_run_finished_at": String(now.timeIntervalSince1970), "last_run_exit": String(exitCode)], clearing: [])
    }

    public func lastRun() async throws -> RunRecord? {
        try await read { db in
            var values: [String: String] = [:]
            for row in try db.fetchAll("SELECT key, value FROM syncgate_meta WHERE key LIKE 'last_run_%'", []) {
                if let key = row.string(0), let value = row.string(1) { values[key] = value }
            }
            guard let started = values["last_run_started_at"].flatMap(Double.init) else { return nil }
            return RunRecord(startedAt: Date(timeIntervalSince1970: started),
                             finishedAt: values["last_run_finished_at"].flatMap(Double.init).map { Date(timeIntervalSince1970: $0) },
                             exitCode: values["last_run_exit"].flatMap { Int($0) })
        }
    }

    private func setMeta(_ values: [String: String], clearing: [String]) async throws {
        try await write { db in
            for key in clearing { try db.execute("DELETE FROM syncgate_meta WHERE key = ?", [key]) }
            for (key, value) in values {
                    try db.execute("INSERT INTO syncgate_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                               [key, value])
            }
        }
    }
}
