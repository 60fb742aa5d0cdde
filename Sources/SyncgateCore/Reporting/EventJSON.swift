import Foundation

/// The `--json` form of events: one object per line.
public enum EventJSON {
    public static func object(_ event: DeliveryEvent) -> [String: Any] {
        var object: [String: Any] = [
            "event": event.name, "path": event.file.path, "source": event.file.source,
            "destination": event.destination, "size": event.size, "time": ReportJSON.time(event.time),
        ]
        switch event.kind {
        case .queued(let reason):
            object["reason"] = reason.description
        case .started(let attempt):
            object["attempt"] = attempt
        case .progress(let bytes):
            object["bytes"] = bytes
            object["fraction"] = event.size > 0 ? Double(bytes) / Double(event.size) : 1
        case .retrying(let attempt, let error, let delay):
            object["attempt"] = attempt
            object["error"] = Redactor.shared.redact(error.message)
            object["class"] = error.failureClass.name
            object["scope"] = error.scope.rawValue
            object["delay_ms"] = Int((delay.seconds * 1000).rounded())
            if let code = error.code { object["code"] = Redactor.shared.redactCode(code) }
        case .synced(let receipt, let attempts, let uploaded):
            object["attempts"] = attempts
            object["uploaded"] = uploaded
            object["remote_name"] = receipt.remoteName
            if let etag = receipt.etag { object["etag"] = Redactor.shared.redact(etag) }
            if let detail = receipt.detail { object["detail"] = Redactor.shared.redact(detail) }
        case .failed(let failure):
            object["error"] = Redactor.shared.redact(failure.message)
            object["class"] = failure.failureClass.name
            object["scope"] = failure.scope.rawValue
            object["attempts"] = failure.attempts
            if let code = failure.code { object["code"] = Redactor.shared.redactCode(code) }
        case .waiting(let failure, _):
            object["error"] = Redactor.shared.redact(failure.message)
            object["class"] = failure.failureClass.name
            object["scope"] = failure.scope.rawValue
            if let code = failure.code { object["code"] = Redactor.shared.redactCode(code) }
        case .gone:
            object["reason"] = SourceGone.reason
        case .skipped(let reason):
            object["reason"] = Redactor.shared.redact(reason.description)
            if case .tooNew(_, let readyAt) = reason { object["ready_at"] = ReportJSON.time(readyAt) }
        }
        return object
    }

    public static func line(_ event: DeliveryEvent) -> String { ReportJSON.encode(object(event)) }

    public static func summaryLine(_ summary: SyncSummary) -> String {
        ReportJSON.encode([
            "event": "summary", "files": summary.files, "planned": summary.planned, "uploaded": summary.uploaded,
            "already_present": summary.alreadyPresent, "up_to_date": summary.upToDate, "too_new": summary.tooNew, "failed": summary.failed,
            "failed_permanently": summary.failedPermanently, "failed_retryable": summary.failedRetryable,
            "waiting": summary.waiting, "sources_failed": summary.sourcesFailed,
            "interrupted": summary.interrupted, "bytes_uploaded": summary.bytesUploaded, "warnings": summary.warnings,
            "seconds": (summary.seconds * 1000).rounded() / 1000, "exit_code": Int(summary.exitCode),
            "removed_from_sources": summary.removedFromSources, "gone_before_sent": summary.goneBeforeSent, "remote_deleted": summary.remoteDeleted,
            "remote_delete_failed": summary.remoteDeleteFailed, "moved": summary.moved, "move_failed": summary.moveFailures.count,
            "delete_limits": summary.deleteLimits.map { ["destination": $0.destination, "wanted": $0.wanted, "max_delete": $0.limit] as [String: Any] },
            "held_back": summary.heldBack.map { ["source": $0.source, "reason": $0.reason, "gone": $0.gone] as [String: Any] },
            "destinations_away": summary.away.map { away -> [String: Any] in
                var object: [String: Any] = [
                    "name": away.name, "state": away.state.rawValue, "since": ReportJSON.time(away.since),
                    "error": Redactor.shared.redact(away.error), "waiting": away.waiting,
                ]
                if let code = away.code { object["code"] = Redactor.shared.redactCode(code) }
                return object
            },
        ] as [String: Any])
    }
}
