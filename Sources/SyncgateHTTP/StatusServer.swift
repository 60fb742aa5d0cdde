import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import SyncgateCore
import Synchronization

/// The status page and API of `syncgate run` (docs/http.md): `/` (the page), `/healthz`, `/readyz`, `/metrics`,
/// `/api/status`, `/api/operations`, `/api/events`, `POST /api/retry`, `POST /api/forget`. A Hummingbird 2
/// application on `settings`' address, with the access rules of ``AccessPolicy``.
///
/// ```swift
/// let server = StatusServer(settings: http, gateway: gateway, logger: logger)   // before the first pass
/// group.addTask { try await server.run() }                                     // until the task is cancelled
/// ```
public struct StatusServer: Sendable {
    public let settings: HTTPSettings
    let gateway: any GatewayObservable
    let logger: Logger
    let heartbeat: Duration
    /// Event streams open at once at most (``EventStreamSlots``).
    var maxEventStreams = 64
    /// The time and size limits of each connection (their number is `settings.maxConnections`).
    var connectionLimits = ConnectionLimits.standard
    /// The places for connections (`settings.maxConnections`), shared by every connection of ``run(onListening:)``.
    let connections: ConnectionLimiter
    /// What `syncgate_build_info` of `/metrics` says.
    public var build = BuildDescription.unknown

    /// Makes the server (and bootstraps swift-metrics onto ``MetricsBootstrap/registry``, once per process, so make
    /// it before the gateway's first pass). `heartbeat`: how often `/api/events` sends a comment line when nothing
    /// happens.
    public init(settings: HTTPSettings, gateway: any GatewayObservable, logger: Logger, heartbeat: Duration = .seconds(15)) {
        MetricsBootstrap.bootstrap()
        _ = ProcessMetrics.fallbackStart
        self.settings = settings
        self.gateway = gateway
        self.logger = logger
        self.heartbeat = heartbeat
        self.connections = ConnectionLimiter(limit: settings.maxConnections, logger: logger)
    }

    /// Listens and answers until the task running it is cancelled, then shuts down gracefully: it stops
    /// accepting, open event streams end, requests under way finish (cut after ``shutdownLimit``), and `run`
    /// returns. Throws when the address cannot be bound. `onListening` gets the port listened on (the one chosen
    /// by the system when `settings.port` is 0).
    public func run(onListening: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let logger = self.logger, settings = self.settings, limits = connectionLimits, limiter = connections
        let door = ConnectionDoor(limiter: limiter, sendBuffer: limits.sendBuffer)
        // One event loop for the listener and all its connections: the door then reads a new connection's TCP_INFO
        // on the loop that accepted it, before anything else is spent on it (the requests themselves are answered
        // on the cooperative pool).
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let app = Application(
            router: makeRouter(),
            server: .http1(configuration: .init(additionalChannelHandlers: [ConnectionGuard(limiter: limiter, limits: limits)])),
            configuration: ApplicationConfiguration(
                address: .hostname(settings.host, port: settings.port), serverName: nil,
                backlog: StatusServer.listenBacklog,
                // A backstop: should closing lag behind a flood, accepting waits instead of taking descriptors.
                availableConnectionsDelegate: MaximumAvailableConnections(settings.maxConnections + StatusServer.closingMargin)
            ),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? settings.port
                await door.install(on: channel, deferring: limits.header)
                logger.info("status page and API on http://\(StatusServer.authority(host: settings.host, port: port))/")
                await onListening(port)
            },
            eventLoopGroupProvider: .shared(loops),
            logger: logger
        )
        var configuration = ServiceGroupConfiguration(services: [app], logger: logger)
        configuration.maximumGracefulShutdownDuration = StatusServer.shutdownLimit
        // No `maximumCancellationDuration`: past it, ServiceGroup ends the whole process with a fatal error (a
        // gateway under load was seen to crash on SIGTERM so). Past the same limit, `run` returns instead and leaves
        // what has not ended yet behind.
        let group = ServiceGroup(configuration: configuration)
        // The group runs in a task of its own, which the caller's cancellation does not reach: it becomes a graceful
        // shutdown instead (a cancelled server would log its accept loop's cancellation as an error).
        let running: Task<Void, any Error>
        if #available(macOS 15, *) {
            running = Task(executorPreference: ServerExecutor()) { try await group.run() }
        } else {
            running = Task { try await group.run() }
        }
        // The event loop goes once the server has really ended (it may be left behind, below).
        defer { Task { _ = await running.result; try? await loops.shutdownGracefully() } }
        let outcome = FirstOutcome()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                outcome.set(continuation)
                Task { outcome.resume(with: await running.result) }
            }
        } onCancel: {
            Task {
                await group.triggerGracefulShutdown()
                try? await Task.sleep(for: StatusServer.shutdownLimit * 2)
                if outcome.resume(with: .success(())) {
                    logger.warning("the status server did not stop within \(StatusServer.shutdownLimit * 2); left behind")
                }
            }
        }
    }

    /// The queue of connections the system completes before the server accepts them (capped by the system's
    /// `net.core.somaxconn`, 4,096 by default). Under a flood of new connections a short queue overflows, and a
    /// client whose handshake is dropped waits a whole second before its next try (TCP's first SYN
    /// retransmission); a queued connection costs the kernel a little memory and the gateway no descriptor.
    static let listenBacklog = 4096

    /// Connections accepted beyond `maxConnections` while those closed to make room finish closing.
    static let closingMargin = 32

    /// How long a graceful shutdown may take before what is left is cancelled.
    public static let shutdownLimit: Duration = .seconds(3)

    /// The routes, behind the access rules.
    func makeRouter() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: AccessMiddleware(policy: AccessPolicy(settings: settings), logger: logger))
        let gateway = self.gateway, logger = self.logger, build = self.build
        router.get("/healthz") { _, _ -> Response in
            Responses.text("ok\n")
        }
        router.get("/readyz") { _, _ -> Response in
            gateway.isReady ? Responses.text("ready\n") : Responses.text("not ready\n", status: .serviceUnavailable)
        }
        router.get("/metrics") { _, _ -> Response in
            let report = try await APIRoutes.answering("metrics", logger: logger) {
                try await gateway.statusReport()
            }
            return Responses.text(MetricsPage.render(report: report, figures: gateway.figures, ready: gateway.isReady, build: build), type: MetricsPage.contentType)
        }
        APIRoutes(gateway: gateway, heartbeat: heartbeat, streams: EventStreamSlots(limit: maxEventStreams),
                  broadcast: EventBroadcast(gateway: gateway, capacity: EventStream.backlogBytes), logger: logger).register(on: router)
        StatusPage(tokenRequired: settings.token != nil).register(on: router)
        return router
    }

    /// `host:port`, an IPv6 host in brackets.
    static func authority(host: String, port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// The first of two outcomes of ``StatusServer/run(onListening:)``: the server's own end, or the end of waiting for
/// it after a shutdown was asked.
private final class FirstOutcome: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Void, any Error>?
        var early: Result<Void, any Error>?
        var resumed = false
    }

    private let state = Mutex(State())

    func set(_ continuation: CheckedContinuation<Void, any Error>) {
        let ready: Result<Void, any Error>? = state.withLock { state in
            if let early = state.early { state.resumed = true; return early }
            state.continuation = continuation
            return nil
        }
        if let ready { continuation.resume(with: ready) }
    }

    /// Resumes the waiter with `result` unless something resumed it before; says whether this did.
    @discardableResult
    func resume(with result: Result<Void, any Error>) -> Bool {
        let waiting: CheckedContinuation<Void, any Error>? = state.withLock { state in
            guard !state.resumed, state.early == nil else { return nil }
            guard let continuation = state.continuation else { state.early = result; return nil }
            state.resumed = true
            state.continuation = nil
            return continuation
        }
        guard let waiting else { return false }
        waiting.resume(with: result)
        return true
    }
}
