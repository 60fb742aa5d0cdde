import Hummingbird
import Logging
import SyncgateCore

/// The JSON API under `/api`: the status report, the live operations, the event stream, and the two changes a
/// person may ask for (retry, forget).
struct APIRoutes: Sendable {
    let gateway: any GatewayObservable
    let heartbeat: Duration
    let streams: EventStreamSlots
    let broadcast: EventBroadcast
    let logger: Logger

    func register(on router: Router<BasicRequestContext>) {
        let gateway = self.gateway, logger = self.logger, heartbeat = self.heartbeat, streams = self.streams, broadcast = self.broadcast
        router.get("/api/status") { _, _ -> Response in
            let text = try await APIRoutes.answering("status", logger: logger) {
                try await gateway.statusReport().json
            }
            return Responses.json(text + "\n")
        }
        router.get("/api/operations") { _, _ -> Response in
            Responses.json(OperationsJSON.text(gateway.operations.snapshot()) + "\n")
        }
        router.get("/api/events") { request, _ -> Response in
            guard let slot = streams.take() else {
                logger.warning("an event stream refused: \(streams.limit) are open")
                throw HTTPError(.serviceUnavailable, headers: [.retryAfter: "10"], message: "too many event streams are open (\(streams.limit))")
            }
            return EventStream(broadcast: broadcast, heartbeat: heartbeat, slot: slot).response(for: request)
        }
        router.post("/api/retry") { request, _ -> Response in
            let selection = try await FileSelection.read(from: request)
            let n = try await APIRoutes.answering("retry", logger: logger) {
                // Off the server's executor: it writes the ledger (``ServerExecutor``).
                try await Task.detached { try await gateway.retry(destination: selection.destination, paths: selection.paths) }.value
            }
            logger.info("retry requested over HTTP", metadata: ["destination": "\(selection.destination ?? "*")", "paths": .stringConvertible(selection.paths.count), "files": .stringConvertible(n)])
            return Responses.json(ReportJSON.encode(["retried": n]) + "\n")
        }
        router.post("/api/forget") { request, _ -> Response in
            let selection = try await FileSelection.read(from: request)
            let n = try await APIRoutes.answering("forget", logger: logger) {
                try await Task.detached { try await gateway.forget(destination: selection.destination, paths: selection.paths) }.value
            }
            logger.info("forget requested over HTTP", metadata: ["destination": "\(selection.destination ?? "*")", "paths": .stringConvertible(selection.paths.count), "files": .stringConvertible(n)])
            return Responses.json(ReportJSON.encode(["forgotten": n]) + "\n")
        }
    }

    /// Runs what the gateway does for a request; an error becomes a 500 whose message is redacted, and is logged.
    static func answering<T: Sendable>(_ what: String, logger: Logger, _ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as HTTPError {
            throw error
        } catch {
            let message = Redactor.shared.redact(String(describing: error))
            logger.error("\(what) failed", metadata: ["error": "\(message)"])
            throw HTTPError(.internalServerError, message: "\(what) failed: \(message)")
        }
    }
}
