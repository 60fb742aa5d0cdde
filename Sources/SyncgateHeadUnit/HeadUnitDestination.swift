import Foundation
import Logging
import SyncgateCore
import SyncgateSDL

/// Files to a car head unit over SmartDeviceLink: RegisterAppInterface, ListFiles, chunked PutFile with
/// per-chunk CRC, DeleteFile, SetAppIcon. Connects lazily, reconnects after the link drops, never retries by
/// itself (the delivery layer does).
///
/// Its errors say whether they are about one file or the head unit as a whole (docs/headunit.md, "Errors and what
/// happens next"): a head unit that is away, will not start a session, or is full is `unavailable`; one that refuses
/// the app is `blocked`; TOO_MANY_PENDING_REQUESTS throttles; the rest are the file's.
public final class HeadUnitDestination: Destination {
    public static let registration = PluginRegistration(
        type: "headunit", summary: "a car head unit over SmartDeviceLink (SDL Core): artwork, audio prompts, data files"
    , decode: { setup in
        var config = try setup.decode(HeadUnitConfig.self)
        if let icon = config.icon { config.icon = setup.resolvePath(icon) }
        let decoded = config
        return { HeadUnitDestination(config: decoded, logger: setup.logger) }
    })

    public let config: HeadUnitConfig
    let link: HeadUnitLink
    let logger: Logger

    public init(config: HeadUnitConfig, logger: Logger = Logger(label: "syncgate.headunit")) {
        self.config = config
        self.logger = logger
        self.link = HeadUnitLink(config: config, logger: logger)
    }

    /// A head unit forgets files (non-persistent ones at ignition off, sometimes all of them): ListFiles is the truth.
    public var listingIsAuthoritative: Bool { true }
    /// A PutFile of the whole file replaces what was there.
    public var resendIsHarmless: Bool { true }
    /// One session per app: one instance of a fleet at a time.
    public var needsOneWriter: Bool { true }
    public var hashesWhileSending: Bool { true }
    /// An app's icons matter first.
    public var preferredOrder: DeliveryOrder { .artworkFirst }

    public func remoteName(forRelativePath path: String) throws -> String {
        try RemoteNameMapper.remoteName(for: path)
    }

    /// Sessions established so far (tests and diagnostics).
    public var sessionCount: Int { get async { await link.sessions } }

    /// A new SDL session (after a dropped link) lets a file's failure count start afresh, as the SDL libraries do.
    public var connectionGeneration: Int { get async { await link.sessions } }

    static func checkName(_ name: String) throws {
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
            throw DestinationError.permanent("\"\(name)\" is not a valid head-unit file name (no \"/\", not \".\" or \"..\")", code: "INVALID_NAME")
        }
        guard name.utf8.count <= RemoteNameMapper.maxLength else {
            throw DestinationError.permanent("\"\(name.prefix(40))...\" is longer than 255 bytes", code: "INVALID_NAME")
        }
    }

    static func emptyFileError(_ path: String) -> DestinationError {
        .permanent("\(path) is empty: a head unit cannot store a 0-byte file (SDL refuses a PutFile without data)", code: "EMPTY_FILE")
    }

    /// Waits (bounded by the response timeout) while the head unit holds the app at level NONE after it
    /// refused a request there; still NONE afterwards is a deferral, not a failure.
    private func waitForLevel(_ connection: SDLConnection) async throws {
        guard await connection.noneRejected else { return }
        let deadline = ContinuousClock.now + config.responseTimeout.duration
        while ContinuousClock.now < deadline {
            let level = await connection.hmiLevel
            let open = await connection.isOpen
            if level != "NONE" || !open { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw DestinationError(
            .deferred(after: ResultClassifier.levelNoneWait), code: "HMI_LEVEL_NONE",
            "the head unit keeps the app at HMI level NONE, where it allows only a few files: waiting for a higher level")
    }

    public func upload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt {
        try HeadUnitDestination.checkName(item.remoteName)
        let reader = try FileReader(path: item.absolutePath)
        let size = try reader.currentSize()
        guard size > 0 else { throw HeadUnitDestination.emptyFileError(item.relativePath) }
        let connection = try await link.current()
        try await waitForLevel(connection)
        let outcome = try await PutFileSender(connection: connection, window: config.pipeline).send(
            remoteName: item.remoteName, reader: reader, size: size, persistent: config.persistent, hashing: item.sha256.isEmpty,
            progress: progress)
        var detail = "\(size) bytes"
        if let space = outcome.spaceAvailable { detail += ", spaceAvailable \(space)" }
        return Receipt(remoteName: item.remoteName, etag: String(format: "crc32:%08x", outcome.crc), detail: detail, sha256: outcome.sha256)
    }

    public func delete(remoteName: String) async throws {
        try HeadUnitDestination.checkName(remoteName)
        let connection = try await link.current()
        try await waitForLevel(connection)
        let known = await connection.files.contains(remoteName)
        let response = try await connection.request(FunctionID.deleteFile, ["syncFileName": .string(remoteName)])
        if response.code.isSuccess {
            await connection.noteDeleted(remoteName, spaceAvailable: response.spaceAvailable)
            return
        }
        let level = await connection.hmiLevel
        if response.code == .rejected && !known {
            throw DestinationError.permanent("the head unit holds no file named \"\(remoteName)\"", code: "FILE_NOT_FOUND")
        }
        await connection.noteNoneRejectionIf(response.code)
        throw ResultClassifier.error(
            response.code, info: response.info, function: "DeleteFile", subject: "\"\(remoteName)\"", hmiLevel: level)
    }

    public func list() async throws -> RemoteListing {
        let connection = try await link.current()
        let names = await connection.files.sorted()
        return RemoteListing(entries: names.map { RemoteListing.Entry(name: $0) }, spaceAvailable: await connection.spaceAvailable,
                             isComplete: await connection.listingIsComplete)
    }

    /// The largest file a PutFile can describe (`length` and `offset` of the RPC spec go up to 100,000,000,000).
    public static let maxFileSize: Int64 = 100_000_000_000

    /// Refused before anything is sent: files whose names collide, empty files, files larger than a PutFile can
    /// describe or than all the room the head unit gives the app (permanent, the file's), and files that do not fit
    /// the space left now (``DestinationError/unavailable(_:code:after:)``: they wait for space, pending).
    public func prepare(_ items: [UploadItem]) async throws -> [String: DestinationError] {
        var rejected: [String: DestinationError] = [:]
        for (name, group) in Dictionary(grouping: items, by: \.remoteName) {
            let paths = Set(group.map(\.relativePath)).sorted()
            if paths.count > 1 {
                rejected[name] = .permanent(
                    "\(paths.map { "\"\($0)\"" }.joined(separator: " and ")) all map to the head-unit name \"\(name)\": rename one of them",
                    code: "NAME_COLLISION")
            }
        }
        for item in items where rejected[item.remoteName] == nil {
            do {
                try HeadUnitDestination.checkName(item.remoteName)
            } catch let error as DestinationError {
                rejected[item.remoteName] = error
                continue
            }
            if item.size == 0 { rejected[item.remoteName] = HeadUnitDestination.emptyFileError(item.relativePath) }
            if item.size > HeadUnitDestination.maxFileSize {
                rejected[item.remoteName] = .permanent(
                    "\(item.relativePath) is \(ByteSize.format(item.size)): larger than a PutFile can describe (\(ByteSize.format(HeadUnitDestination.maxFileSize)))",
                    code: "FILE_TOO_LARGE")
            }
        }
        let candidates = items.filter { rejected[$0.remoteName] == nil }
        guard !candidates.isEmpty else { return rejected }
        // Without a head unit the uploads meet the connection error themselves (at once: the link remembers it).
        guard let connection = await link.currentUnlessFailed() else {
            logger.debug("space check skipped: no connection to the head unit")
            return rejected
        }
        guard let space = await connection.spaceAvailable else { return rejected }
        var remaining = space
        let present = await connection.files
        var waiting: [UploadItem] = []
        for item in candidates where !present.contains(item.remoteName) {
            if item.size <= remaining {
                remaining -= item.size
            } else if present.isEmpty && item.size > space {
                // The head unit holds none of the app's files, so the space it reports is all it gives the app:
                // deleting files cannot make room for this one.
                rejected[item.remoteName] = .permanent(
                    "\(item.relativePath) needs \(ByteSize.format(item.size)) but the head unit gives this app \(ByteSize.format(space)) in all",
                    code: "FILE_TOO_LARGE")
            } else {
                waiting.append(item)
            }
        }
        // One message for all that wait, as `status` shows the destination: the head unit is full, not each file bad.
        let waitingBytes = waiting.reduce(Int64(0)) { $0 + $1.size }
        for item in waiting {
            rejected[item.remoteName] = .unavailable(
                "head unit full: \(ByteSize.format(remaining)) free for this app, \(ByteSize.format(waitingBytes)) waiting (\(waiting.count) file\(waiting.count == 1 ? "" : "s")); \(item.relativePath) needs \(ByteSize.format(item.size)): the files wait until space is freed",
                code: "OUT_OF_MEMORY")
        }
        return rejected
    }

    /// A ``DestinationError`` says its own class and scope (see ``ResultClassifier``); a frame this gateway refuses
    /// mid-transfer is the file's, retryable (a new session follows); the rest as the core classifies them.
    public func classify(_ error: any Error) -> Classification {
        if let error = error as? DestinationError { return error.classification }
        if error is SDLError { return Classification(.retryable()) }
        return Classification.of(error)
    }

    /// TCP connect and session start (or the session already open), at most `connect_timeout` +
    /// `response_timeout`; throws what an upload would.
    public func probe() async throws {
        try await link.probe()
    }

    public func finish() async {
        await link.shutdown()
    }
}
