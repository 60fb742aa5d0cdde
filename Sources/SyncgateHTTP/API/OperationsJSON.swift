import Foundation
import SyncgateCore

/// `GET /api/operations`: the gateway's live operations (``OperationList``), which `report.json` can only show as
/// the ledger last recorded them: uploads in flight with their progress, recently completed, recently failed.
enum OperationsJSON {
    static func text(_ snapshot: OperationList.Snapshot) -> String {
        ReportJSON.encode([
            "ongoing": snapshot.ongoing.map(object),
            "recent": ["completed": snapshot.recentlyCompleted.map(object), "failed": snapshot.recentlyFailed.map(object)],
        ] as [String: Any], pretty: false)
    }

    static func object(_ operation: OperationList.Operation) -> [String: Any] {
        var object: [String: Any] = [
            "path": operation.file.path, "source": operation.file.source, "destination": operation.destination,
            "progress": operation.progress, "attempts": operation.attempts, "time": ReportJSON.time(operation.time),
        ]
        if let error = operation.error { object["error"] = Redactor.shared.redact(error) }
        return object
    }
}
