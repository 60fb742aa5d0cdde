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
    }

    public var generatedAt: Date
    public var destinations: [DestinationLine]
    /// Every file not synced (of the chosen destination; only failed ones with `failedOnly`).
    public var files: [LedgerEntry]
    /// Uploads in flight now (rows `uploading` while a sync holds the lock).
    public var ongoing: [LedgerEntry]
    public var recentlyCompleted: [LedgerEntry]
    public var recentlyFailed: [LedgerEntry]
    /// Whether a sync is running now.
    public var syncRunning: Bool

    public static func build(config: GatewayConfig, ledger: Ledger, destination: String?, failedOnly: Bool, now: Date = Date()) throws -> StatusReport {
        let counts = try ledger.counts()
        let last = try ledger.lastSuccess()
        let chosen = config.destinations.filter { destination == nil || $0.name == destination }
        let lines = chosen.map { d in
            DestinationLine(
                name: d.name, type: d.type, synced: counts[d.name]?[.synced] ?? 0, pending: counts[d.name]?[.pending] ?? 0,
                uploading: counts[d.name]?[.uploading] ?? 0, failed: counts[d.name]?[.failed] ?? 0, lastSuccess: last[d.name]
            )
        }
        let names = Set(chosen.map(\.name))
        let statuses: Set<FileStatus> = failedOnly ? [.failed] : [.pending, .uploading, .failed]
        let files = try ledger.entries(destination: destination, statuses: statuses).filter { names.contains($0.destination) }
        let running = StateLock.isHeld(statePath: config.statePath)
        let ongoing = running ? files.filter { $0.status == .uploading } : []
        var completed: [LedgerEntry] = []
        var failed: [LedgerEntry] = []
        for d in chosen {
            completed += try ledger.recentlySynced(since: now - d.settings.recentCompleted.seconds).filter { $0.destination == d.name }
            failed += try ledger.recentlyFailed(since: now - d.settings.recentFailed.seconds).filter { $0.destination == d.name }
        }
        return StatusReport(
            generatedAt: now, destinations: lines, files: files, ongoing: ongoing,
            recentlyCompleted: completed.sorted { ($0.syncedAt ?? .distantPast) > ($1.syncedAt ?? .distantPast) },
            recentlyFailed: failed.sorted { ($0.lastAttemptAt ?? .distantPast) > ($1.lastAttemptAt ?? .distantPast) },
            syncRunning: running
        )
    }

    static func fileObject(_ entry: LedgerEntry) -> [String: Any] {
        var object: [String: Any] = [
            "path": entry.file.path, "source": entry.file.source, "destination": entry.destination,
            "status": entry.status.rawValue, "attempts": entry.attempts, "last_attempt_at": JSONText.time(entry.lastAttemptAt),
            "last_error": entry.lastError.map { Redactor.shared.redact($0) } ?? NSNull(),
            "error_class": entry.errorClass ?? NSNull(), "next_retry_at": JSONText.time(entry.nextRetryAt),
            "size": entry.size, "progress": entry.progress,
        ]
        if let code = entry.errorCode { object["error_code"] = code }
        if let receipt = entry.receipt {
            object["remote_name"] = receipt.remoteName
            if let etag = receipt.etag { object["etag"] = etag }
        }
        if let synced = entry.syncedAt { object["synced_at"] = JSONText.time(synced) }
        return object
    }

    public var json: String {
        let object: [String: Any] = [
            "generated_at": JSONText.time(generatedAt),
            "sync_running": syncRunning,
            "destinations": destinations.map { d -> [String: Any] in
                ["name": d.name, "type": d.type, "synced": d.synced, "pending": d.pending, "uploading": d.uploading,
                 "failed": d.failed, "last_success_at": JSONText.time(d.lastSuccess)]
            },
            "files": files.map(StatusReport.fileObject),
            "ongoing": ongoing.map(StatusReport.fileObject),
            "recent": [
                "completed": recentlyCompleted.map(StatusReport.fileObject),
                "failed": recentlyFailed.map(StatusReport.fileObject),
            ],
        ]
        return JSONText.encode(object, pretty: true)
    }

    public var text: String {
        var out = ""
        let formatter = ISO8601DateFormatter()
        func when(_ date: Date?) -> String { date.map { formatter.string(from: $0) } ?? "never" }
        out += "DESTINATION          TYPE      SYNCED  PENDING  FAILED  LAST SUCCESS\n"
        for d in destinations {
            out += d.name.padding(toLength: 20, withPad: " ", startingAt: 0) + " "
                + d.type.padding(toLength: 9, withPad: " ", startingAt: 0) + " "
                + String(d.synced).leftPad(6) + "  " + String(d.pending + d.uploading).leftPad(7) + "  "
                + String(d.failed).leftPad(6) + "  " + when(d.lastSuccess) + "\n"
        }
        if syncRunning { out += "\nA sync is running now.\n" }
        if !ongoing.isEmpty {
            out += "\nUploading now:\n"
            for e in ongoing { out += "  \(e.destination)  \(e.file.path)  \(Int(e.progress * 100))%\n" }
        }
        if files.isEmpty {
            out += "\nEvery routed file is synced.\n"
        } else {
            out += "\nNot synced (\(files.count)):\n"
            for e in files {
                out += "  [\(e.status.rawValue)] \(e.destination)  \(e.file.path)  attempts=\(e.attempts) last=\(when(e.lastAttemptAt))"
                if let next = e.nextRetryAt { out += " next=\(when(next))" }
                out += "\n"
                if let error = e.lastError { out += "      \(Redactor.shared.redact(error))\n" }
            }
        }
        if !recentlyCompleted.isEmpty {
            out += "\nRecently completed (\(recentlyCompleted.count)):\n"
            for e in recentlyCompleted.prefix(20) { out += "  \(e.destination)  \(e.file.path)  \(when(e.syncedAt))\n" }
        }
        if !recentlyFailed.isEmpty {
            out += "\nRecently failed (\(recentlyFailed.count)):\n"
            for e in recentlyFailed.prefix(20) { out += "  \(e.destination)  \(e.file.path)  \(when(e.lastAttemptAt))\n" }
        }
        return out
    }
}

extension String {
    func leftPad(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
