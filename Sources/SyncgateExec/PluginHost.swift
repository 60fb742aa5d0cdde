import Foundation
import Logging
import SyncgateCore
import SyncgateJSON
import Synchronization

/// Keeps one destination's plugin running: starts it when first needed (`hello`, then `configure`), one process
/// per destination, and starts it again after it crashed or was killed, waiting 0.25 s doubling up to 10 s
/// between starts while it keeps failing (``RetryPolicy/restartDelay(failures:)``; a request answered resets that).
/// The start is part of the attempt that needs the plugin: a start that fails is retried by the delivery layer's
/// retry loop like any other attempt.
final class PluginHost: Sendable {
    let spec: PluginSpec
    let logger: Logger

    private struct State {
        var current: PluginSession?
        /// A caller is starting the plugin: the others wait for that start to end, then look again.
        var starting = false
        var waiting: [StartWaiter] = []
        var failures = 0
        var lastFailure: ContinuousClock.Instant?
        var firstCapabilities: PluginCapabilities?
        var generationCount = 0
        var refused: [(key: String, message: String)] = []
        /// The requirement of the delivery keys the plugin did not meet at its last start.
        var unmet: PluginRequirement?
        /// Every session started whose log may not be read to its end yet (``stop()`` waits for them).
        var sessions: [PluginSession] = []

        /// How long to wait before the next start, while the plugin keeps failing.
        var backoffLeft: Duration {
            guard failures > 0, let lastFailure else { return .zero }
            let left = RetryPolicy.restartDelay(failures: failures) - (ContinuousClock.now - lastFailure)
            return max(left, .zero)
        }
    }

    /// A caller waiting for another's start of the plugin to end: a task suspended, or a thread that must block.
    private enum StartWaiter {
        case task(CheckedContinuation<Void, Never>)
        case thread(Latch)

        func wake() {
            switch self {
            case .task(let continuation): continuation.resume()
            case .thread(let latch): latch.open()
            }
        }
    }

    /// What a caller does next about the plugin.
    private enum Next {
        case use(PluginSession)
        /// Start it (the caller's turn), after waiting out the backoff.
        case start(after: Duration)
        /// Wait for another caller's start to end.
        case wait
    }

    private let state = Mutex(State())

    /// The settings the plugin refused at its last start (key under `settings`, its words).
    var refusedSettings: [(key: String, message: String)] { state.withLock { $0.refused } }

    /// The capability the delivery keys need that the plugin did not declare at its last start.
    var unmetRequirement: PluginRequirement? { state.withLock { $0.unmet } }

    init(spec: PluginSpec, logger: Logger) {
        self.spec = spec
        self.logger = logger
    }

    /// How many times the plugin was started (a new process: a new "connection").
    var generation: Int { state.withLock { $0.generationCount } }

    /// What the plugin said it can do, starting it if it never ran; nil when it cannot be started (a start that
    /// failed is not tried again here: the next upload or probe does, after the backoff, and says why). Blocks
    /// while the plugin starts (a `Destination` property is synchronous).
    var capabilities: PluginCapabilities? {
        let (known, tried) = state.withLock { ($0.firstCapabilities, $0.failures > 0) }
        if let known { return known }
        if tried { return nil }
        _ = try? sessionBlocking()
        return state.withLock { $0.firstCapabilities }
    }

    /// The running plugin, started (after the backoff) when there is none. One caller at a time starts it, on a
    /// thread of its own; the others await that start and look again.
    func session() async throws -> PluginSession {
        let (running, wait): (PluginSession?, Duration) = state.withLock { state in
            if let current = state.current, !current.isEnded { return (current, .zero) }
            return (nil, state.backoffLeft)
        }
        if let running { return running }
        if wait > .zero { try await Task.sleep(for: wait) }
        try Task.checkCancellation()
        while true {
            switch next() {
            case .use(let session):
                return session
            case .start(let wait):
                return try await withCheckedThrowingContinuation { continuation in
                    Thread.detachNewThread { [self] in
                        continuation.resume(with: Result { try startInTurn(after: wait) })
                    }
                }
            case .wait:
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let queued = state.withLock { state in
                        guard state.starting else { return false }
                        state.waiting.append(.task(continuation))
                        return true
                    }
                    if !queued { continuation.resume() }
                }
            }
        }
    }

    /// ``session()`` for a thread that may block.
    func sessionBlocking() throws -> PluginSession {
        while true {
            switch next() {
            case .use(let session):
                return session
            case .start(let wait):
                return try startInTurn(after: wait)
            case .wait:
                let latch = Latch()
                let queued = state.withLock { state in
                    guard state.starting else { return false }
                    state.waiting.append(.thread(latch))
                    return true
                }
                if queued { latch.wait() }
            }
        }
    }

    /// The running plugin, or the turn to start it (taken), or a start under way to wait for.
    private func next() -> Next {
        state.withLock { state in
            if state.starting { return .wait }
            if let current = state.current, !current.isEnded { return .use(current) }
            state.starting = true
            return .start(after: state.backoffLeft)
        }
    }

    /// Starts the plugin in the caller's turn (after `wait`), then hands the turn back, waking the callers waiting
    /// for it. On a thread that may block.
    private func startInTurn(after wait: Duration) throws -> PluginSession {
        defer {
            let waiting = state.withLock { state in
                state.starting = false
                defer { state.waiting = [] }
                return state.waiting
            }
            for waiter in waiting { waiter.wake() }
        }
        if wait > .zero { usleep(UInt32(wait.seconds * 1_000_000)) }
        do {
            let (session, capabilities) = try start()
            let first = state.withLock { state in
                state.current = session
                state.generationCount += 1
                if state.firstCapabilities == nil { state.firstCapabilities = capabilities }
                return state.firstCapabilities
            }
            if let first, first != capabilities {
                logger.warning("\(spec.destination): \(spec.label) changed its capabilities since it first started (\(first.names) to \(capabilities.names)); the first stay in force until syncgate starts again")
            }
            return session
        } catch {
            state.withLock { state in
                state.failures += 1
                state.lastFailure = .now
            }
            throw error
        }
    }

    /// A request was answered: the plugin works, and its next crash starts the backoff afresh.
    func markHealthy() {
        state.withLock { if $0.failures != 0 { $0.failures = 0 } }
    }

    /// Stops the plugin (its stdin closed, then killed if it has not exited within a second), and waits for the log
    /// of every plugin it started to be read to its end (bounded: ``PluginSession/waitForLog()``): their last lines
    /// are out when this returns. For a thread that may block.
    func stop() {
        let (session, sessions): (PluginSession?, [PluginSession]) = state.withLock { state in
            defer {
                state.current = nil
                state.sessions = []
            }
            return (state.current, state.sessions)
        }
        session?.close(grace: .seconds(1))
        for other in sessions where other !== session && other.isEnded { other.waitForLog() }
    }

    private func sessionEnded(_ session: PluginSession, expected: Bool) {
        state.withLock { state in
            if state.current === session { state.current = nil }
            if !expected {
                state.failures += 1
                state.lastFailure = .now
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
        state.withLock { state in
            state.sessions.removeAll { $0.isEnded && $0.logIsRead }
            state.sessions.append(session)
        }
        do {
            let hello = try session.requestBlocking("hello", [
                "protocol": .array(PluginProtocol.versions.map { .int($0) }),
                "destination": .string(spec.destination),
                "syncgate": "0.1.0",
                "concurrency": .int(spec.concurrency),
                "attempt_timeout": .double(spec.attemptTimeout.seconds),
                "answer_timeout": .double(spec.answerTimeout.seconds),
                "cancel_grace": .double(spec.cancelGrace.seconds),
                // This syncgate reads and writes batches; a plugin that speaks them declares `batch` (docs/plugins.md).
                "batch": true,
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
            if let unmet = spec.requirements.first(where: { !capabilities.names.contains($0.capability) }) {
                session.close(grace: .milliseconds(500))
                state.withLock { $0.unmet = unmet }
                throw DestinationError.blocked(unmet.located, code: "needs-\(unmet.capability)")
            }
            // From its hello answer on, lines either way may be batches.
            if capabilities.batch { session.outbox.useBatches() }
            _ = try session.requestBlocking("configure", [
                "destination": .string(spec.destination), "settings": spec.settings, "config_dir": .string(spec.directory),
            ], what: "configure", timeout: spec.startTimeout)
            return (session, capabilities)
        } catch let body as PluginErrorBody {
            session.close(grace: .milliseconds(500))
            var error = body.destinationError
            error.scope = .destination
            if !body.settings.isEmpty {
                state.withLock { $0.refused = body.settings }
                error.message = body.settings.map { spec.locate($0.key, $0.message) }.joined(separator: "; ")
            }
            error.message = "\(spec.label) refused to start: \(error.message)"
            throw error
        } catch let gone as PluginGone {
            throw DestinationError.unavailable(gone.message, code: "plugin-start")
        }
    }
}
