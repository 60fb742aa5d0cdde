import Foundation
import Logging
import SyncgateCore
import SyncgateSDL

/// The destination's link to the head unit: connects lazily, shares one connection among concurrent calls,
/// and after the link dropped connects afresh (new session, registration, ListFiles) on the next call.
actor HeadUnitLink {
    let config: HeadUnitConfig
    let logger: Logger
    private var connection: SDLConnection?
    private var connecting: Task<SDLConnection, any Error>?
    /// How many sessions were established (1 for the first).
    private(set) var sessions = 0
    /// When the last attempt to establish a session failed.
    private var lastFailure: ContinuousClock.Instant?

    init(config: HeadUnitConfig, logger: Logger) {
        self.config = config
        self.logger = logger
    }

    /// The open connection, establishing one when there is none.
    func current() async throws -> SDLConnection {
        if let connection, await connection.isOpen { return connection }
        connection = nil
        if let connecting { return try await connecting.value }
        let task = Task { try await self.establish() }
        connecting = task
        do {
            let established = try await task.value
            connecting = nil
            connection = established
            lastFailure = nil
            return established
        } catch {
            connecting = nil
            lastFailure = .now
            throw error
        }
    }

    /// The open connection, or a new one unless establishing one failed within the last response timeout
    /// (then `nil`): for optional work such as the space check, which should not wait out a dead head unit twice.
    func currentUnlessRecentlyFailed() async -> SDLConnection? {
        if let lastFailure, ContinuousClock.now - lastFailure < config.responseTimeout.duration { return nil }
        return try? await current()
    }

    private func establish() async throws -> SDLConnection {
        let connection = try await SDLConnection.connect(
            host: config.host, port: config.port, connectTimeout: config.connectTimeout.duration,
            responseTimeout: config.responseTimeout.duration, logger: logger)
        do {
            try await connection.startService()
            try await connection.register(app: config.app)
            try await connection.refreshListing()
        } catch {
            await connection.markClosed(
                (error as? DestinationError) ?? .retryable("head unit session failed: \(error)", code: "session-failed"))
            throw error
        }
        sessions += 1
        if sessions > 1 { logger.info("reconnected to the head unit at \(config.host):\(config.port)") }
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

    /// Ends the session cleanly (UnregisterAppInterface, EndService) and closes the connection.
    func shutdown() async {
        connecting?.cancel()
        connecting = nil
        if let connection { await connection.close() }
        connection = nil
    }
}
