import Foundation
import Logging
import SyncgateCore
@testable import SyncgateHTTP

/// A ``StatusServer`` listening on a port the system chose, in a task of its own; ``stop()`` cancels that task
/// and waits for `run()` to return.
final class RunningServer: Sendable {
    let port: Int
    let settings: HTTPSettings
    /// The server's connection places (what it holds open, and what it turned away).
    let connections: ConnectionLimiter
    private let task: Task<Void, any Error>

    /// Where a client reaches it (a server on every address through 127.0.0.1).
    var base: String {
        switch settings.host {
        case "0.0.0.0", "127.0.0.1": "http://127.0.0.1:\(port)"
        case let host where host.contains(":"): "http://[\(host)]:\(port)"
        case let host: "http://\(host):\(port)"
        }
    }

    init(gateway: any GatewayObservable, host: String = "127.0.0.1", token: String? = nil, heartbeat: Duration = .seconds(15),
         maxEventStreams: Int = 64, maxConnections: Int = HTTPSettings.defaultMaxConnections, limits: ConnectionLimits = .standard,
         logger: Logger = Logger(label: "syncgate-http-test")) async throws {
        settings = HTTPSettings(host: host, port: 0, token: token.map { Secret($0) }, maxConnections: maxConnections)
        var server = StatusServer(settings: settings, gateway: gateway, logger: logger, heartbeat: heartbeat)
        server.maxEventStreams = maxEventStreams
        server.connectionLimits = limits
        connections = server.connections
        let (ports, listening) = AsyncStream<Int>.makeStream()
        task = Task {
            defer { listening.finish() }
            try await server.run { port in listening.yield(port) }
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            try await task.value
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the status server stopped before it listened"])
        }
        self.port = port
    }

    /// Cancels the server's task and waits for `run()` to return (what it threw, other than cancellation, is
    /// rethrown).
    func stop() async throws {
        task.cancel()
        do {
            try await task.value
        } catch is CancellationError {}
    }
}
