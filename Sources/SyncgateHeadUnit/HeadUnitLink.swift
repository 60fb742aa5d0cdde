import Foundation
import Logging
import NIOCore
import NIOPosix
import SyncgateCore
import SyncgateSDL

/// The destination's link to the head unit: connects lazily, shares one connection among concurrent calls,
/// and after the link dropped connects afresh (new session, registration, ListFiles) on the next call.
///
/// One session set-up at a time serves every caller that needs it. When it fails for a reason that is the
/// head unit's (nothing listening, no StartService ACK, no answer to RegisterAppInterface, the link dropped while
/// starting, the app refused), the failure is remembered: every call meets the same error at once, instead of each
/// waiting out the timeouts again, for ``holdOff`` (for a refused registration, until ``probe()`` or
/// ``shutdown()``). A caller that is cancelled stops waiting at once; the set-up itself ends when its time limits
/// pass or ``shutdown()`` cancels it.
actor HeadUnitLink {
    let config: HeadUnitConfig
    let logger: Logger
    private var connection: SDLConnection?
    private var setup: (task: Task<Void, Never>, result: EventLoopFuture<SDLConnection>)?
    /// How many sessions were established (1 for the first).
    private(set) var sessions = 0
    /// The last session set-up's failure, while it is remembered (`until` nil: until a probe or shutdown).
    private var failure: (error: DestinationError, until: ContinuousClock.Instant?)?
    /// Counts shutdowns: a set-up that ends after one closes its connection instead of keeping it.
    private var epoch = 0

    init(config: HeadUnitConfig, logger: Logger) {
        self.config = config
        self.logger = logger
    }

    /// How long a failed set-up is remembered: the time one set-up may take (connect and response timeouts).
    var holdOff: Duration { config.connectTimeout.duration + config.responseTimeout.duration }

    private var endpoint: String { "\(config.host):\(config.port)" }

    /// The open connection, establishing one when there is none (or the remembered failure of the last attempt).
    func current() async throws -> SDLConnection {
        while let existing = connection {
            if await existing.isOpen { return existing }
            if connection === existing { connection = nil }
        }
        if let failure {
            if failure.until.map({ ContinuousClock.now < $0 }) ?? true { throw failure.error }
            self.failure = nil
        }
        return try await FutureWait.value(of: startSetup())
    }

    /// The open connection, or a new one; `nil` while a failed set-up is remembered or when one fails now: for
    /// optional work such as the space check, which must not wait out a dead head unit twice.
    func currentUnlessFailed() async -> SDLConnection? {
        if let failure, failure.until.map({ ContinuousClock.now < $0 }) ?? true { return nil }
        return try? await current()
    }

    /// Forgets a remembered failure and checks that a session can be had now: TCP connect and session start (or the
    /// session already open). Waits at most `connect_timeout` + `response_timeout`; throws what an upload would.
    func probe() async throws {
        failure = nil
        let limit = holdOff
        let endpoint = self.endpoint
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { _ = try await self.current() }
            group.addTask {
                try await Task.sleep(for: limit)
                throw DestinationError.unavailable(
                    "the head unit at \(endpoint) did not complete a session set-up within \(limit.syncgateText)", code: "timeout")
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    private func startSetup() -> EventLoopFuture<SDLConnection> {
        if let setup { return setup.result }
        let promise = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: SDLConnection.self)
        let epoch = self.epoch
        let task = Task {
            do {
                let established = try await self.establish()
                if self.setupSucceeded(established, epoch: epoch) {
                    promise.succeed(established)
                } else {
                    await established.markClosed(.retryable("the destination's batch ended", code: "closed"))
                    promise.fail(CancellationError())
                }
            } catch {
                promise.fail(self.setupFailed(error, epoch: epoch))
            }
        }
        setup = (task, promise.futureResult)
        return promise.futureResult
    }

    private func setupSucceeded(_ established: SDLConnection, epoch: Int) -> Bool {
        guard epoch == self.epoch else { return false }
        setup = nil
        connection = established
        failure = nil
        return true
    }

    private func setupFailed(_ error: any Error, epoch: Int) -> any Error {
        guard epoch == self.epoch else { return error }
        setup = nil
        if let error = error as? DestinationError, error.scope == .destination {
            switch error.failureClass {
            case .permanent: failure = (error, nil)
            case .retryable: failure = (error, .now + holdOff)
            case .deferred: break
            }
        }
        return error
    }

    /// What a failure while starting a session means: the head unit is unavailable (retryable) or refuses the app
    /// (permanent), for every file alike. A deferral (ListFiles refused at level NONE) stays the file's; a
    /// cancellation stays a cancellation.
    static func setupError(_ error: any Error) -> any Error {
        switch error {
        case is CancellationError:
            return error
        case let error as DestinationError:
            switch (error.scope, error.failureClass) {
            case (.destination, _), (_, .deferred): return error
            case (.file, .retryable(let after)): return DestinationError(.retryable(after: after), scope: .destination, code: error.code, error.message)
            case (.file, .permanent): return DestinationError(.permanent, scope: .destination, code: error.code, error.message)
            }
        case let error as SDLError:
            return DestinationError.unavailable("the head unit sent something this gateway refuses: \(error)", code: "protocol-error")
        default:
            return DestinationError.unavailable("the session with the head unit failed to start: \(error)", code: "session-failed")
        }
    }

    private func establish() async throws -> SDLConnection {
        let connection = try await SDLConnection.connect(
            host: config.host, port: config.port, connectTimeout: config.connectTimeout.duration,
            responseTimeout: config.responseTimeout.duration, logger: logger)
        do {
            try await connection.startService()
            try await connection.register(app: config.app, language: config.language, hmiLanguage: config.hmiLanguage)
            try await connection.refreshListing()
        } catch {
            let scoped = HeadUnitLink.setupError(error)
            await connection.markClosed(
                (scoped as? DestinationError) ?? .retryable("head unit session failed: \(scoped)", code: "session-failed"))
            throw scoped
        }
        sessions += 1
        if sessions > 1 { logger.info("reconnected to the head unit at \(endpoint)") }
        if let icon = config.icon { await setIcon(path: icon, on: connection) }
        return connection
    }

    /// Uploads the app icon when the head unit lacks it, then SetAppIcon. A failure is logged, never fatal:
    /// the files still go.
    private func setIcon(path: String, on connection: SDLConnection) async {
        do {
            let name = try RemoteNameMapper.remoteName(for: URL(fileURLWithPath: path).lastPathComponent)
            if await !connection.files.contains(name) {
                let reader = try FileReader(path: path)
                let size = try reader.currentSize()
                guard size > 0 else {
                    logger.warning("app icon \(path) is empty: not sent")
                    return
                }
                _ = try await PutFileSender(connection: connection, window: config.pipeline).send(
                    remoteName: name, reader: reader, size: size, persistent: true, progress: { _ in })
            }
            let response = try await connection.request(FunctionID.setAppIcon, ["syncFileName": .string(name)])
            if !response.code.isSuccess {
                logger.warning("SetAppIcon \(name): head unit answered \(response.code.rawValue)\(response.info.map { " (\($0))" } ?? "")")
            }
        } catch {
            logger.warning("app icon \(path) not set: \(error)")
        }
    }

    /// Ends the session cleanly (UnregisterAppInterface, EndService: bounded, see ``SDLConnection/close()``),
    /// cancels a set-up under way and forgets a remembered failure.
    func shutdown() async {
        epoch += 1
        setup?.task.cancel()
        setup = nil
        failure = nil
        let open = connection
        connection = nil
        if let open { await open.close() }
    }
}
