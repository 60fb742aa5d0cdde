import Foundation

/// What `syncgate status` shows, read from the ledger (so it works while a sync runs in another process).
public struct StatusReport: Sendable {
    public struct DestinationLine: Sendable {
        public var name: String
        public var type: String
        public var synced: Int
        public var pending: Int
        public var uploading: Int
        public var failed: Int
        public var lastSuccess: Date?
        /// Its state as the last run left it (available when never tried).
        public var state: DestinationState
        /// Since when, why, and when a gateway probes it next (unavailable or blocked only).
        public var since: Date?
        public var lastError: String?
        public var errorCode: String?
        public var nextProbe: Date?
        /// Rows of files gone from their source, not counted above, kept until dropped (`recent.completed` after,
        /// or once `delete_remote` deleted their copy).
        public var removed = 0
        /// Its last verification against the ledger (`syncgate check`), nil when it has none.
        public var verification: VerificationRecord? = nil

        /// Files that wait for it: pending while it is away.
        public var waiting: Int { state == .available ? 0 : pending + uploading }
    }

    public var generatedAt: Date
    /// The last run on this state file (nil: none has run yet).
    public var lastRun: Ledger.RunRecord?
    public var destinations: [DestinationLine]
    /// Every file not synced (of the chosen destination; only failed ones with `failedOnly`), or with `paths`
    /// those files at every destination, synced ones included.
    public var files: [LedgerEntry]
    /// Uploads in flight now (rows `uploading` while a sync holds the lock).
    public var ongoing: [LedgerEntry]
    public var recentlyCompleted: [LedgerEntry]
    public var recentlyFailed: [LedgerEntry]
    /// Whether a sync is running now.
    public var syncRunning: Bool
    /// Whether `files` lists chosen paths (synced included) rather than what is not synced.
    public var listsPaths = false
    /// Whether the process running is a gateway (`syncgate run`).
    public var gatewayRunning = false
    /// Sources a running gateway holds back from deletions (``SourceJudge``), until a walk no longer finds why.
    public var heldBack: [SyncSummary.SourceHold] = []

    /// Recent entries read at most (per list).
    static let recentLimit = 1000

    public static func build(
        config: GatewayConfig, ledger: Ledger, destination: String?, failedOnly: Bool, paths: [String] = [], now: Date = Date()
    ) async throws -> StatusReport {
        let counts = try await ledger.counts()
        let removed = try await ledger.removedCounts()
        let last = try await ledger.lastSuccess()
        let records = try await ledger.destinationRecords()
        let verifications = try await ledger.verifications()
        let chosen = config.destinations.filter { destination == nil || $0.name == destination }
        let lines = chosen.map { d in
            let record = records[d.name]
            let away = record.map { $0.state != .available } ?? false
            var line = DestinationLine(
                name: d.name, type: d.type, synced: counts[d.name]?[.synced] ?? 0, pending: counts[d.name]?[.pending] ?? 0,
                uploading: counts[d.name]?[.uploading] ?? 0, failed: counts[d.name]?[.failed] ?? 0, lastSuccess: last[d.name],
                state: record?.state ?? .available, since: away ? record?.since : nil, lastError: away ? record?.lastError : nil,
                errorCode: away ? record?.errorCode : nil, nextProbe: away ? record?.nextProbeAt : nil
            )
            line.removed = removed[d.name] ?? 0
            line.verification = verifications[d.name]
            return line
        }
        let names = Set(chosen.map(\.name))
        let files: [LedgerEntry]
        if paths.isEmpty {
            let statuses: Set<FileStatus> = failedOnly ? [.failed] : [.pending, .uploading, .failed]
            files = try await ledger.entries(destination: destination, statuses: statuses).filter { names.contains($0.destination) }
        } else {
            files = try await ledger.entries(paths: paths).filter { names.contains($0.destination) }
        }
        let running: Bool
        let gatewayRunning: Bool
        switch config.state {
        case .sqlite:
            running = StateLock.isHeld(state: config.state)
            gatewayRunning = running && StateLock.gatewayHolds(state: config.state)
        case .postgres:
            let holder = try await ledger.postgresLockHolder()
            running = holder != nil
            gatewayRunning = holder?.hasPrefix("gateway ") ?? false
        }
        let ongoing = running ? try await ledger.entries(destination: destination, statuses: [.uploading]).filter { names.contains($0.destination) } : []
        // One read per list over the longest window, each destination then keeping its own: the cost does not grow
        // with destinations times rows.
        let windows = Dictionary(chosen.map { ($0.name, ($0.settings.recentCompleted.seconds, $0.settings.recentFailed.seconds)) }) { a, _ in a }
        let longestCompleted = windows.values.map(\.0).max() ?? 0
        let longestFailed = windows.values.map(\.1).max() ?? 0
        let completed = try await ledger.recentlySynced(since: now - longestCompleted, limit: recentLimit).filter { entry in
            windows[entry.destination].map { now.timeIntervalSince(entry.syncedAt ?? .distantPast) <= $0.0 } ?? false
        }
        let failed = try await ledger.recentlyFailed(since: now - longestFailed, limit: recentLimit).filter { entry in
            windows[entry.destination].map { now.timeIntervalSince(entry.lastAttemptAt ?? entry.updatedAt) <= $0.1 } ?? false
        }
        return StatusReport(
            generatedAt: now, lastRun: try await ledger.lastRun(), destinations: lines, files: files, ongoing: ongoing,
            recentlyCompleted: completed, recentlyFailed: failed, syncRunning: running, listsPaths: !paths.isEmpty,
            gatewayRunning: gatewayRunning
        )
    }

    /// Whether something needs a person: a file failed, or a destination is blocked (`status --check`).
    public var needsAttention: Bool {
        destinations.contains { $0.failed > 0 || $0.state == .blocked }
    }

    // MARK: - JSON

    /// One ledger row as `status --json` shows it.
    public static func fileObject(_ entry: LedgerEntry) -> [String: Any] {
        var object: [String: Any] = [
            "path": entry.file.path, "source": entry.file.source, "destination": entry.destination,
            "status": entry.status.rawValue, "attempts": entry.attempts, "last_attempt_at": ReportJSON.time(entry.lastAttemptAt),
            "last_error": entry.lastError.map { Redactor.shared.redact($0) } ?? NSNull(),
            "error_class": entry.errorClass?.name ?? NSNull(), "next_retry_at": ReportJSON.time(entry.nextRetryAt),
            "size": entry.size, "progress": entry.progress,
        ]
        if let code = entry.errorCode { object["error_code"] = Redactor.shared.redactCode(code) }
        if let sha = entry.sha256 { object["sha256"] = sha }
        if let receipt = entry.receipt {
            object["remote_name"] = receipt.remoteName
            if let etag = receipt.etag { object["etag"] = Redactor.shared.redact(etag) }
        }
        if let synced = entry.syncedAt { object["synced_at"] = ReportJSON.time(synced) }
        if let holder = entry.claimedBy {
            object["claimed_by"] = holder
            object["lease_until"] = ReportJSON.time(entry.leaseUntil)
        }
        if let removed = entry.removed {
            object["removed"] = removed.rawValue
            object["removed_at"] = ReportJSON.time(entry.removedAt)
        }
        return object
    }

    static func destinationObject(_ d: DestinationLine) -> [String: Any] {
        var object: [String: Any] = [
            "name": d.name, "type": d.type, "state": d.state.rawValue, "synced": d.synced, "pending": d.pending,
            "uploading": d.uploading, "failed": d.failed, "waiting": d.waiting, "last_success_at": ReportJSON.time(d.lastSuccess),
            "removed": d.removed, "verification": d.verification.map { $0.json as Any } ?? NSNull(),
        ]
        if d.state != .available {
            object["since"] = ReportJSON.time(d.since)
            object["last_error"] = d.lastError.map { Redactor.shared.redact($0) } ?? NSNull()
            if let code = d.errorCode { object["error_code"] = Redactor.shared.redactCode(code) }
            if let next = d.nextProbe { object["next_probe_at"] = ReportJSON.time(next) }
        }
        return object
    }

    public var json: String {
        var object: [String: Any] = [
            "generated_at": ReportJSON.time(generatedAt),
            "sync_running": syncRunning,
            "gateway_running": gatewayRunning,
            "last_run": lastRun.map { run -> Any in
                ["started_at": ReportJSON.time(run.startedAt), "finished_at": ReportJSON.time(run.finishedAt),
                 "exit_code": run.exitCode.map { $0 as Any } ?? NSNull()] as [String: Any]
            } ?? NSNull(),
            "destinations": destinations.map(StatusReport.destinationObject),
            "files": files.map(StatusReport.fileObject),
            "ongoing": ongoing.map(StatusReport.fileObject),
            "recent": [
                "completed": recentlyCompleted.map(StatusReport.fileObject),
                "failed": recentlyFailed.map(StatusReport.fileObject),
            ],
        ]
        object["held_back"] = heldBack.map { ["source": $0.source, "reason": $0.reason, "gone": $0.gone] as [String: Any] }
        object["needs_attention"] = needsAttention
        return ReportJSON.encode(object, pretty: true)
    }

    // MARK: - Text

    public var text: String {
        var out = ""
        let formatter = ISO8601DateFormatter()
        func when(_ date: Date?) -> String { date.map { formatter.string(from: $0) } ?? "never" }
        out += "DESTINATION          TYPE      STATE        SYNCED  PENDING  FAILED  LAST SUCCESS\n"
        for d in destinations {
            out += d.name.padding(toLength: 20, withPad: " ", startingAt: 0) + " "
                + d.type.padding(toLength: 9, withPad: " ", startingAt: 0) + " "
                + d.state.rawValue.padding(toLength: 11, withPad: " ", startingAt: 0) + " "
                + String(d.synced).leftPad(6) + "  " + String(d.pending + d.uploading).leftPad(7) + "  "
                + String(d.failed).leftPad(6) + "  " + when(d.lastSuccess) + "\n"
        }
        // A ledger written before runs were recorded (schema 1) has rows but no run: it has run.
        let anyRow = destinations.contains { $0.synced + $0.pending + $0.uploading + $0.failed > 0 }
        if lastRun == nil && !anyRow {
            out += "\nNo sync has run on this state file yet (run syncgate sync).\n"
            return out
        }
        for d in destinations where d.state != .available {
            let files = "\(d.waiting) file\(d.waiting == 1 ? "" : "s") wait\(d.waiting == 1 ? "s" : "") for it"
            let why = TerminalText.escape(Redactor.shared.redact(d.lastError ?? "no error recorded"))
            let since = d.since.map { HumanTime.text($0, now: generatedAt) } ?? "?"
            if d.state == .blocked {
                out += "\n\(d.name): blocked since \(since) (\(why)): fix its credentials or settings (or run syncgate retry); \(files).\n"
            } else {
                out += "\n\(d.name): unavailable since \(since) (\(why)); \(files), sent when it answers.\n"
            }
        }
        let removedRows = destinations.filter { $0.removed > 0 }
        if !removedRows.isEmpty {
            out += "\nGone from the sources (not counted above): "
                + removedRows.map { "\($0.name) \($0.removed)" }.joined(separator: ", ") + ".\n"
        }
        if gatewayRunning {
            out += "\nA gateway (syncgate run) is running on this state file now.\n"
        } else if syncRunning {
            out += "\nA sync is running now.\n"
        }
        if !ongoing.isEmpty {
            out += "\nUploading now:\n"
            for e in ongoing { out += "  \(e.destination)  \(TerminalText.escape(e.file.path))  \(Int(e.progress * 100))%" + (e.claimedBy.map { "  (\(TerminalText.escape($0)))" } ?? "") + "\n" }
        }
        if listsPaths {
            out += files.isEmpty ? "\nNone of these paths is in the ledger.\n" : "\nFiles (\(files.count)):\n"
            for e in files { out += StatusReport.fileLine(e, when: when) }
        } else {
            // Files that only wait for a destination that is away are counted above, not listed one by one.
            let away = Set(destinations.filter { $0.state != .available }.map(\.name))
            let listed = files.filter { $0.status == .failed || !away.contains($0.destination) }
            if files.isEmpty {
                out += "\nEvery routed file is synced" + (lastRun.map { " (last run \(when($0.finishedAt ?? $0.startedAt)))" } ?? "") + ", as the ledger says:\n"
                for d in destinations { out += "  \(d.name): " + verificationText(d) + "\n" }
            } else if !listed.isEmpty {
                out += "\nNot synced (\(listed.count)):\n"
                for e in listed { out += StatusReport.fileLine(e, when: when) }
            }
        }
        let verified = destinations.filter { $0.verification != nil }
        if !files.isEmpty && !listsPaths && !verified.isEmpty {
            out += "\nVerification:\n"
            for d in verified { out += "  \(d.name): " + verificationText(d) + "\n" }
        }
        if !recentlyCompleted.isEmpty {
            out += "\nRecently completed (\(recentlyCompleted.count)):\n"
            for e in recentlyCompleted.prefix(20) { out += "  \(e.destination)  \(TerminalText.escape(e.file.path))  \(when(e.syncedAt))\n" }
        }
        if !recentlyFailed.isEmpty {
            out += "\nRecently failed (\(recentlyFailed.count)):\n"
            // A file can fail before any attempt (its source file unreadable): then when it failed.
            for e in recentlyFailed.prefix(20) { out += "  \(e.destination)  \(TerminalText.escape(e.file.path))  \(when(e.lastAttemptAt ?? e.updatedAt))\n" }
        }
        return out
    }

    /// `synced (verified 2 h ago)`, with what the last verification found, or that the ledger is unverified.
    func verificationText(_ d: DestinationLine) -> String {
        guard let v = d.verification else { return "synced, unverified (syncgate check compares the ledger with what it holds)" }
        let ago = HumanTime.ago(v.verifiedAt, now: generatedAt)
        guard v.findings > 0 else { return "synced (verified \(ago), \(v.checked) checked)" }
        var found: [String] = []
        if v.missing > 0 { found.append("\(v.missing) missing") }
        if v.different > 0 { found.append("\(v.different) different") }
        if v.extra > 0 { found.append("\(v.extra) extra") }
        if v.errors > 0 { found.append("\(v.errors) unreadable") }
        let repaired = v.repaired > 0 ? "; \(v.repaired) marked pending" : ""
        return "verified \(ago): \(v.checked) checked, " + found.joined(separator: ", ") + repaired
    }

    static func fileLine(_ e: LedgerEntry, when: (Date?) -> String) -> String {
        var line = "  [\(e.status.rawValue)] \(e.destination)  \(TerminalText.escape(e.file.path))  attempts=\(e.attempts) last=\(when(e.lastAttemptAt))"
        if let removed = e.removed { line += " (\(removed.label))" }
        if let next = e.nextRetryAt { line += " next=\(when(next))" }
        if let synced = e.syncedAt, e.status == .synced { line += " synced=\(when(synced))" }
        line += "\n"
        if let error = e.lastError, e.status != .synced { line += "      \(TerminalText.escape(Redactor.shared.redact(error)))\n" }
        return line
    }
}

extension String {
    func leftPad(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
