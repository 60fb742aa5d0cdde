import Foundation
import Logging
import SyncgateCore
import SyncgateJSON
import Synchronization

/// `type: exec` (and `type: NAME` for a program `syncgate-destination-NAME`): a destination that is any program
/// speaking the plugin protocol of docs/plugins.md on its stdin and stdout. The program reads each file itself
/// from the path it is given; syncgate never holds a file's bytes. Everything else (retries, the ledger, status,
/// destination states) is the core's, as for a built-in destination.
public final class ExecDestination: Destination, Sendable {
    /// `type: exec`, with `command: [program, args...]`.
    public static let registration = PluginRegistration(type: "exec", summary: "any program speaking the plugin protocol (docs/plugins.md)") { setup in
        let config = try setup.decode(ExecConfig.self)
        guard let command = config.command else { throw setup.invalid("command", "missing required key 'command' (the program and its arguments)") }
        guard let first = command.first, !first.isEmpty else { throw setup.invalid("command", "must name a program") }
        guard let program = PluginResolver.program(forCommand: first, configDirectory: setup.baseDirectory, environment: setup.environment) else {
            throw setup.invalid("command", "no program '\(first)' (\(first.contains("/") ? "relative to the config's folder" : "on PATH")), or it cannot be run")
        }
        return try make(setup, config: config, program: program, arguments: Array(command.dropFirst()))
    }

    /// `type: NAME` for a NAME that is not built in: the program `syncgate-destination-NAME` in `plugins/` beside the
    /// config or on `PATH`. `known`: the built-in types, for the error when there is no such program.
    public static func registration(forType type: String, known: [String]) -> PluginRegistration {
        PluginRegistration(type: type, summary: "the plugin program \(PluginProtocol.programPrefix)\(type)") { setup in
            guard let program = PluginResolver.program(forType: type, configDirectory: setup.baseDirectory, environment: setup.environment) else {
                let folder = setup.baseDirectory.appendingPathComponent("plugins").standardizedFileURL.path
                throw setup.invalid("type", "unknown destination type '\(type)' (known: \(known.joined(separator: ", ")); no program \(PluginProtocol.programPrefix)\(type) in \(folder) or on PATH)")
            }
            let config = try setup.decode(ExecConfig.self)
            if config.command != nil { throw setup.invalid("command", "only for type: exec (type: \(type) runs \(program))") }
            return try make(setup, config: config, program: program, arguments: [])
        }
    }

    static func make(_ setup: DestinationSetup, config: ExecConfig, program: String, arguments: [String]) throws -> @Sendable () -> any Destination {
        for (index, argument) in arguments.enumerated() where Redactor.shared.redact(argument) != argument {
            throw setup.invalid("command", "argument \(index + 1) holds a secret: pass secrets through env: or settings: (other users can read a program's arguments)")
        }
        var environment: [String: String] = [:]
        for (name, value) in setup.environment where ExecDestination.inherited.contains(name) || name.hasPrefix("LC_") {
            environment[name] = value
        }
        for (name, value) in config.env { environment[name] = value }
        environment["SYNCGATE_DESTINATION"] = setup.name
        environment["SYNCGATE_PLUGIN_PROTOCOL"] = PluginProtocol.versions.map(String.init).joined(separator: ",")
        var spec = PluginSpec(
            executable: program, arguments: arguments, environment: environment, directory: setup.baseDirectory.standardizedFileURL.path,
            destination: setup.name, settings: config.settings, startTimeout: config.startTimeout, answerTimeout: config.answerTimeout,
            cancelGrace: config.cancelGrace,
            locate: { key, message in setup.invalid("settings." + key, message).description }
        )
        spec.concurrency = setup.delivery.concurrency
        spec.listTimeout = config.listTimeout
        spec.oneWriter = config.oneWriter
        spec.attemptTimeout = setup.delivery.attemptTimeout
        spec.requirements = requirements(setup)
        if setup.checksFiles {
            // `syncgate validate`: start the plugin and have it check its settings now, so that what it refuses is a
            // located config error (exit 78) rather than a blocked destination at the next sync.
            let host = PluginHost(spec: spec, logger: setup.logger)
            defer { host.stop() }
            do {
                _ = try host.sessionBlocking()
            } catch let error as DestinationError {
                // Every key it refused, each at its line (as many config errors).
                if let refused = ConfigError.combined(host.refusedSettings.map { setup.invalid("settings." + $0.key, $0.message) }) { throw refused }
                if let unmet = host.unmetRequirement { throw setup.invalid(unmet.key, unmet.message) }
                throw setup.invalid(setup.type == "exec" ? "command" : "type", error.message)
            }
        }
        let logger = setup.logger
        let finished = spec
        return { ExecDestination(spec: finished, logger: logger) }
    }

    /// The capabilities the destination's delivery keys need of its plugin: `bandwidth` (a limit that is not `off`
    /// all day) needs `paces`, since the plugin reads the file itself; `delete_remote: true` needs `delete`.
    static func requirements(_ setup: DestinationSetup) -> [PluginRequirement] {
        var needs: [(String, String, String)] = []
        if let bandwidth = setup.delivery.bandwidth, !bandwidth.isOff {
            needs.append(("paces", "bandwidth", "needs a plugin that paces its reads (capability \"paces\", docs/plugins.md); this one does not declare it (bandwidth: off, here or under defaults:, lifts the limit)"))
        }
        if setup.delivery.deleteRemote {
            needs.append(("delete", "delete_remote", "needs a plugin that deletes (capability \"delete\"); this one does not"))
        }
        return needs.map { capability, key, message in
            PluginRequirement(capability: capability, key: key, message: message, located: setup.invalid(key, message).description)
        }
    }

    /// Variables of syncgate's environment a plugin gets (besides `LC_*`); the rest (credentials of other
    /// destinations among them) it does not.
    public static let inherited: Set<String> = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "SHELL", "PYTHONPATH"]

    public let spec: PluginSpec
    let host: PluginHost
    private let attempts = AttemptCounter()
    /// What the plugin did against the protocol without breaking a request (progress going back): each said once
    /// in the log, and read by `plugin check`.
    let notes: ProtocolNotes

    public init(spec: PluginSpec, logger: Logger) {
        self.spec = spec
        host = PluginHost(spec: spec, logger: logger)
        notes = ProtocolNotes(logger: logger, destination: spec.destination)
    }

    /// What the plugin can do (it is started to ask, the first time); none when it cannot start.
    public var capabilities: PluginCapabilities { host.capabilities ?? PluginCapabilities() }

    public var remoteNamesAreDistinct: Bool { capabilities.namesDistinct }
    public var listingIsAuthoritative: Bool { capabilities.listingAuthoritative }
    public var resendIsHarmless: Bool { capabilities.resendHarmless }
    public var supportsBatchDelete: Bool { capabilities.batchDelete }
    /// `one_writer: true` in the config, or the plugin declares `one_writer` (it is started to ask, as every run
    /// starts it anyway).
    public var needsOneWriter: Bool { spec.oneWriter || capabilities.oneWriter }
    /// Asked right before each request that writes (a put, a delete): a lapsed fence of this instance's hold on a
    /// shared ledger stops it going out (``Destination/useWriteFence(_:)``).
    let writeFence = WriteFence()

    public func useWriteFence(_ refusal: @escaping @Sendable () -> (any Error)?) {
        writeFence.use(refusal)
    }
    public var connectionGeneration: Int { get async { host.generation } }

    /// The program's size and modification time: a new version of a plugin unblocks its destination.
    public var settingsFingerprint: String {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: spec.executable) else { return "" }
        let size = (attributes[.size] as? NSNumber)?.int64Value ?? 0
        let time = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        return "\(spec.executable)\u{0}\(size)\u{0}\(time)"
    }

    /// A put's own deadline: a little before the delivery layer's `attempt_timeout` (which would end it anyway, with
    /// an error that does not name the plugin).
    var putDeadline: Duration {
        let margin = min(Duration.milliseconds(250), spec.attemptTimeout / 10)
        return spec.attemptTimeout - margin
    }

    public func upload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt {
        let attempt = attempts.next(item.remoteName)
        let size = item.size
        let reported = ProgressClamp()
        // With a `bandwidth` limit the plugin asks for each piece of the file before it sends it (`want`), and the
        // destination's one token bucket grants it, shared with every other upload (docs/plugins.md).
        let session = try await startedSession()
        let pacing = capabilities.paces ? SendPacing.current : nil
        var fields: [String: JSONValue] = [
            "path": .string(item.absolutePath), "relative_path": .string(item.relativePath), "source": .string(item.source),
            "remote_name": .string(item.remoteName), "size": .int(item.size), "sha256": .string(item.sha256),
            "mtime": .double(item.modificationTime.timeIntervalSince1970), "attempt": .int(attempt),
            "outcome_unknown": .bool(item.outcomeUnknown),
        ]
        if pacing != nil { fields["paced"] = true }
        try writeFence.verify()
        let label = spec.label
        let notes = self.notes
        let answer = try await call("put", fields, what: "put '\(TerminalText.escape(item.remoteName))'", idle: false, deadline: putDeadline, session: session, progress: { bytes in
            if bytes > size { notes.add("\(label) sent progress \(bytes) for put '\(item.remoteName)', past its size \(size)") }
            if let value = reported.advance(to: min(bytes, size)) {
                progress(value)
            } else if let back = reported.wentBack(to: bytes) {
                notes.add("\(label) sent progress of put '\(item.remoteName)' going back, from \(back) to \(bytes)")
            }
        }, paces: true, pacing: pacing)
        attempts.clear(item.remoteName)
        return ExecDestination.receipt(answer, remoteName: item.remoteName)
    }

    static func receipt(_ answer: JSONValue, remoteName: String) -> Receipt {
        Receipt(
            remoteName: answer["remote_name"]?.string ?? remoteName, etag: answer["etag"]?.string,
            detail: answer["detail"]?.string.map { Redactor.shared.snippet($0, limit: 500) }
        )
    }

    public func delete(remoteName: String) async throws {
        guard capabilities.delete else { throw DestinationError.permanent("\(spec.label) does not delete", code: "unsupported") }
        try writeFence.verify()
        _ = try await call("delete", ["remote_name": .string(remoteName)], what: "delete '\(TerminalText.escape(remoteName))'", idle: true)
    }

    public func delete(remoteNames: [String]) async throws -> [String: DestinationError] {
        try writeFence.verify()
        let answer = try await call("delete", ["remote_names": .array(remoteNames.map { .string($0) })], what: "delete of \(remoteNames.count) names", idle: true)
        var failures: [String: DestinationError] = [:]
        if case .object(let failed)? = answer["failed"] {
            for member in failed {
                if let body = try? PluginErrorBody(member.value, line: ArraySlice(Array(member.value.text.utf8))) {
                    failures[member.name] = body.destinationError
                } else {
                    failures[member.name] = .permanent("\(spec.label) gave no reason", code: "plugin")
                }
            }
        }
        return failures
    }

    /// The longest listing taken in, in names and in bytes of names, and the longest name: a plugin streaming more
    /// is stopped (its list cancelled, and killed if it goes on past the cancel grace), so that a runaway plugin
    /// cannot fill memory. A whole listing must also end within `list_timeout`.
    static let maxListing = 2_000_000
    static let maxListingBytes = 64 << 20
    static let maxNameBytes = 4096

    public func list() async throws -> RemoteListing {
        guard capabilities.list else { throw DestinationError.permanent("\(spec.label) does not list", code: "unsupported") }
        let collected = ListingCollector(label: spec.label, limit: ExecDestination.maxListing, byteLimit: ExecDestination.maxListingBytes,
                                         nameLimit: ExecDestination.maxNameBytes)
        let answer = try await call("list", [:], what: "list", idle: true, deadline: spec.listTimeout, entry: { collected.add($0) })
        return RemoteListing(entries: collected.entries, spaceAvailable: answer["space_available"]?.int64, isComplete: answer["complete"]?.bool ?? true)
    }

    /// `syncgate check`: the plugin's `list` (entries may carry their `sha256`); a plugin that does not list cannot be
    /// verified, which `check` says without counting it a failure.
    public func verificationListing() async throws -> RemoteListing {
        do {
            return try await list()
        } catch let error as DestinationError where error.code == "unsupported" {
            throw DestinationError.permanent("cannot be verified: \(error.message)", code: VerificationFinding.notVerifiable)
        }
    }

    public func existingCopy(of item: UploadItem) async throws -> Receipt? {
        guard capabilities.existingCopy else { return nil }
        let answer = try await call("exists", [
            "path": .string(item.absolutePath), "remote_name": .string(item.remoteName), "size": .int(item.size),
            "sha256": .string(item.sha256),
        ], what: "exists '\(TerminalText.escape(item.remoteName))'", idle: true)
        guard let receipt = answer["receipt"], case .object = receipt else { return nil }
        return ExecDestination.receipt(receipt, remoteName: item.remoteName)
    }

    /// Starts the plugin when it is not running (that alone is the probe of a plugin without `probe`), then asks it.
    public func probe() async throws {
        let session = try await startedSession()
        guard capabilities.probe else { return }
        _ = try await call("probe", [:], what: "probe", idle: true, session: session)
    }

    public func finish() async {
        let host = self.host
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                host.stop()
                continuation.resume()
            }
        }
    }

    private func startedSession() async throws -> PluginSession {
        do {
            return try await host.session()
        } catch let error as DestinationError {
            throw error
        } catch let error as CancellationError {
            throw error
        } catch {
            throw DestinationError.unavailable("\(spec.label): \(error)", code: "plugin-start")
        }
    }

    /// Sends one request to the running plugin (started when needed) and turns what goes wrong into a
    /// ``DestinationError``: the plugin's own error as it classified it; a plugin that exited, hung or broke the
    /// protocol while the request was in flight, the request's retryable failure.
    private func call(
        _ op: String, _ fields: [String: JSONValue], what: String, idle: Bool, deadline: Duration? = nil, session given: PluginSession? = nil,
        progress: (@Sendable (Int64) -> Void)? = nil, entry: (@Sendable (RemoteListing.Entry) -> (any Error)?)? = nil,
        paces: Bool = false, pacing: SendPacing? = nil
    ) async throws -> JSONValue {
        let session: PluginSession
        if let given { session = given } else { session = try await startedSession() }
        do {
            let answer = try await session.request(
                op, fields, what: what, idleLimit: idle ? spec.answerTimeout : nil, deadline: deadline, progress: progress, entry: entry,
                paces: paces, pacing: pacing)
            host.markHealthy()
            return answer
        } catch let body as PluginErrorBody {
            host.markHealthy()
            throw body.destinationError
        } catch let gone as PluginGone {
            throw DestinationError.retryable("\(gone.message) (during \(what))", code: "plugin-gone")
        } catch let timeout as PluginTimeout {
            throw DestinationError.retryable(timeout.message, code: "plugin-timeout")
        }
    }
}

/// Counts each remote name's attempts while it is not delivered (the `attempt` of a put).
final class AttemptCounter: Sendable {
    private let counts = Mutex<[String: Int]>([:])
    func next(_ name: String) -> Int {
        counts.withLock { counts in
            let value = (counts[name] ?? 0) + 1
            counts[name] = value
            return value
        }
    }
    func clear(_ name: String) { counts.withLock { _ = $0.removeValue(forKey: name) } }
}

/// Keeps byte progress going forward only.
final class ProgressClamp: Sendable {
    private let last = Mutex<Int64>(-1)
    func advance(to value: Int64) -> Int64? {
        last.withLock { last in
            guard value > last else { return nil }
            last = value
            return value
        }
    }

    /// The progress reached so far when `value` is below it (a plugin whose progress went back), else nil.
    func wentBack(to value: Int64) -> Int64? {
        last.withLock { last in value < last ? last : nil }
    }
}

/// The entries of a streamed listing, up to limits on names, on bytes of names, and on one name's bytes: the
/// entry past a limit is refused with the error that stops the listing (and what was collected is dropped).
final class ListingCollector: Sendable {
    struct Collected {
        var entries: [RemoteListing.Entry] = []
        var bytes = 0
        var refused = false
    }

    private let state = Mutex(Collected())
    let label: String
    let limit: Int
    let byteLimit: Int
    let nameLimit: Int

    init(label: String, limit: Int, byteLimit: Int, nameLimit: Int) {
        self.label = label
        self.limit = limit
        self.byteLimit = byteLimit
        self.nameLimit = nameLimit
    }

    /// Takes `entry` in; the error that ends the listing when it is past a limit.
    func add(_ entry: RemoteListing.Entry) -> (any Error)? {
        let size = entry.name.utf8.count
        return state.withLock { state -> (any Error)? in
            guard !state.refused else { return nil }
            let refusal: DestinationError? =
                if size > nameLimit {
                    .permanent("\(label) listed a name of \(size) bytes (at most \(nameLimit))", code: "listing-name-too-long")
                } else if state.entries.count >= limit {
                    .permanent("\(label) listed more than \(limit) names", code: "listing-too-long")
                } else if state.bytes + size > byteLimit {
                    .permanent("\(label) listed more than \(byteLimit >> 20) MiB of names", code: "listing-too-long")
                } else {
                    nil
                }
            if let refusal {
                state.refused = true
                state.entries = []
                return refusal
            }
            state.entries.append(entry)
            state.bytes += size
            return nil
        }
    }

    var entries: [RemoteListing.Entry] { state.withLock { $0.entries } }
}
