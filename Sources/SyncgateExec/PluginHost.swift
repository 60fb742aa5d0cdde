import Foundation
import Logging
import SyncgateCore
import SyncgateJSON

/// Keeps one destination's plugin running: starts it when first needed (`hello`, then `configure`), one process
/// per destination, and starts it again after it crashed or was killed, waiting 0.25 s doubling up to 10 s
/// between starts while it keeps failing (``RetryPolicy/restartDelay(failures:)``; a request answered resets that).
/// The start is part of the attempt that needs the plugin: a start that fails is retried by the delivery layer's
/// retry loop like any other attempt.
final class PluginHost: @unchecked Sendable {
    let spec: PluginSpec
    let logger: Logger
    private let condition = NSCondition()
    private var current: PluginSession?
    private var starting = false
    private var failures = 0
    private var lastFailure: ContinuousClock.Instant?
    private var firstCapabilities: PluginCapabilities?
    private var generationCount = 0
    private var refused: [(key: String, message: String)] = []

    /// The settings the plugin refused at its last start (key under `settings`, its words).
    var refusedSettings: [(key: String, message: String)] { condition.withLock { refused } }

    init(spec: PluginSpec, logger: Logger) {
        self.spec = spec
        self.logger = logger
    }

    /// How many times the plugin was started (a new process: a new "connection").
    var generation: Int { condition.withLock { generationCount } }

    /// What the plugin said it can do, starting it if it never ran; nil when it cannot be started (a start that
    /// failed is not tried again here: the next upload or probe does, after the backoff, and says why).
    var capabilities: PluginCapabilities? {
        let (known, tried) = condition.withLock { (firstCapabilities, failures > 0) }
        if let known { return known }
        if tried { return nil }
        _ = try? sessionBlocking()
        return condition.withLock { firstCapabilities }
    }

    /// The running plugin, started (after the backoff) when there is none.
    func session() async throws -> PluginSession {
        let (running, wait): (PluginSession?, Duration) = condition.withLock {
            if let current, !current.isEnded { return (current, .zero) }
            return (nil, backoffLeft())
        }
        if let running { return running }
        if wait > .zero { try await Task.sleep(for: wait) }
        try Task.checkCancellation()
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { [self] in
                continuation.resume(with: Result { try sessionBlocking() })
            }
        }
    }

    private func backoffLeft() -> Duration {
        guard failures > 0, let lastFailure else { return .zero }
        let left = RetryPolicy.restartDelay(failures: failures) - (ContinuousClock.now - lastFailure)
        return max(left, .zero)
    }

    /// ``session()`` for a thread that may block.
    func sessionBlocking() throws -> PluginSession {
        condition.lock()
        while starting { condition.wait() }
        if let current, !current.isEnded {
            condition.unlock()
            return current
        }
        let wait = backoffLeft()
        starting = true
        condition.unlock()
        defer {
            condition.withLock {
                starting = false
                condition.broadcast()
            }
        }
        if wait > .zero { usleep(UInt32(wait.seconds * 1_000_000)) }
        do {
            let (session, capabilities) = try start()
            condition.withLock {
                current = session
                generationCount += 1
                if firstCapabilities == nil { firstCapabilities = capabilities }
            }
            if let first = condition.withLock({ firstCapabilities }), first != capabilities {
                logger.warning("\(spec.destination): \(spec.label) changed its capabilities since it first started (\(first.names) to \(capabilities.names)); the first stay in force until syncgate starts again")
            }
            return session
        } catch {
            condition.withLock {
                failures += 1
                lastFailure = .now
            }
            throw error
        }
    }

    /// A request was answered: the plugin works, and its next crash starts the backoff afresh.
    func markHealthy() {
        condition.withLock { if failures != 0 { failures = 0 } }
    }

    /// Stops the plugin (its stdin closed, then killed if it has not exited within a second).
    func stop() {
        let session: PluginSession? = condition.withLock {
            defer { current = nil }
            return current
        }
        session?.close(grace: .seconds(1))
    }

    private func sessionEnded(_ session: PluginSession, expected: Bool) {
        condition.withLock {
            if current === session { current = nil }
            if !expected {
                failures += 1
                lastFailure = .now
            }
        }
    }

    /// Starts the plugin, says hello and hands it its settings. Throws a destination-scoped ``DestinationError``:
    /// blocked when the program cannot be run, speaks another protocol version or refuses its settings;
    /// unavailable when it crashes, hangs or answers a retryable error.
    private func start() throws -> (PluginSession, PluginCapabilities) {
        let process: PluginProcess
        do {
            process = try PluginProcess(executable: spec.executable, arguments: spec.arguments, environment: spec.environment, directory: spec.directory)
        } catch let error as POSIXError {
            let text = String(cString: strerror(error.code.rawValue))
            if [.ENOENT, .EACCES, .ENOEXEC, .ENOTDIR, .ELOOP].contains(error.code) {
                throw DestinationError.blocked("cannot start \(spec.label) (\(spec.executable)): \(text)", code: "\(error.code)")
            }
            throw DestinationError.unavailable("cannot start \(spec.label): \(text)", code: "\(error.code)")
        }
        let session = PluginSession(process: process, label: spec.label, logger: logger, cancelGrace: spec.cancelGrace) { [weak self] session, expected in
            self?.sessionEnded(session, expected: expected)
        }
        do {
            let hello = try session.requestBlocking("hello", [
                "protocol": .array(PluginProtocol.versions.map { .int($0) }),
                "destination": .string(spec.destination),
                "syncgate": "0.1.0",
                "concurrency": .int(spec.concurrency),
                "attempt_timeout": .double(spec.attemptTimeout.seconds),
            ], what: "hello", timeout: spec.startTimeout)
            guard let version = hello["protocol"]?.int64 else {
                session.end(PluginGone(message: "\(spec.label) broke the protocol: its hello names no \"protocol\""), kill: true)
                throw DestinationError.blocked("\(spec.label) broke the protocol: its hello names no \"protocol\" version", code: "protocol")
            }
            guard PluginProtocol.versions.contains(Int(version)) else {
                session.close(grace: .milliseconds(200))
                throw DestinationError.blocked(
                    "\(spec.label) speaks protocol \(version); this syncgate speaks \(PluginProtocol.versions.map(String.init).joined(separator: ", "))",
                    code: "protocol-version")
            }
            let capabilities = PluginCapabilities(hello["capabilities"])
            _ = try session.requestBlocking("configure", [
                "destination": .string(spec.destination), "settings": spec.settings, "config_dir": .string(spec.directory),
            ], what: "configure", timeout: spec.startTimeout)
            return (session, capabilities)
        } catch let body as PluginErrorBody {
            session.close(grace: .milliseconds(500))
            var error = body.destinationError
            error.scope = .destination
            if !body.settings.isEmpty {
                condition.withLock { refused = body.settings }
                error.message = body.settings.map { spec.locate($0.key, $0.message) }.joined(separator: "; ")
            }
            error.message = "\(spec.label) refused to start: \(error.message)"
            throw error
        } catch let gone as PluginGone {
            throw DestinationError.unavailable(gone.message, code: "plugin-start")
        }
    }
}
