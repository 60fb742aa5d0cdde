import ArgumentParser
import Foundation
import Logging
import SyncgateCore
import Synchronization

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The config file (default: $SYNCGATE_CONFIG, else the first of ./plugins.yaml, $XDG_CONFIG_HOME/syncgate/plugins.yaml, /etc/syncgate/plugins.yaml).",
            valueName: "path"),
        completion: .file(extensions: ["yaml", "yml"]))
    var config: String?

    @Flag(name: [.short, .long], help: "Log more (repeat for debug).")
    var verbose: Int

    @Flag(name: [.short, .long], help: "Log only errors.")
    var quiet = false

    @Option(name: .long, help: "Log lines as plain text (plain) or one JSON object per line for log shippers (json).")
    var logFormat: LogLine.Format = .plain

    var logLevel: Logger.Level {
        if quiet { return .error }
        if let env = ProcessInfo.processInfo.environment["SYNCGATE_LOG_LEVEL"], let level = Logger.Level(rawValue: env) { return level }
        switch verbose {
        case 0: return .warning
        case 1: return .info
        default: return .debug
        }
    }

    /// Sets up the process once (logging with secrets scrubbed; a closed output pipe reported as EPIPE, not a
    /// signal) and returns the logger.
    func makeLogger() -> Logger {
        let level = logLevel
        ProcessSetup.once(level, format: logFormat)
        return Logger(label: "syncgate")
    }

    /// The config file to read (``ConfigDiscovery``); when there is none, says where it looked and exits 78.
    func configFile() throws -> ConfigDiscovery.Found {
        do {
            return try ConfigDiscovery().locate(explicit: config)
        } catch {
            Console.error(error.description)
            throw ExitCode(ExitStatus.config)
        }
    }

    /// Loads the config (`file`, or the one ``configFile()`` finds); config errors print one line each,
    /// `file:line:col: key: message`, and exit 78.
    func loadConfig(
        logger: Logger, file: ConfigDiscovery.Found? = nil, checkingFiles: Bool = false, readingLedgerOnly: Bool = false
    ) throws -> GatewayConfig {
        let path = try (file ?? configFile()).path
        do {
            return try GatewayConfig.load(
                path: path, registry: BuiltinPlugins.registry, logger: logger, checkingFiles: checkingFiles,
                readingLedgerOnly: readingLedgerOnly)
        } catch let error as ConfigError {
            let all = error.all
            for each in all { Console.error(each.description) }
            if all.count > 1 { Console.error("\(all.count) errors in \(path)") }
            throw ExitCode(ExitStatus.config)
        }
    }

    /// Opens the ledger; a damaged or foreign state file is reported (exit 78), never replaced; a PostgreSQL state
    /// that cannot be reached now exits 75 (a later run may succeed).
    func openLedger(_ config: GatewayConfig) throws -> Ledger {
        do {
            return try Ledger(state: config.state)
        } catch let error as LedgerError {
            Console.error(error.description)
            throw ExitCode(error.temporary ? ExitStatus.retryScheduled : ExitStatus.config)
        }
    }

    /// The ledger of a command that looks (`status`, `check`): with no SQLite state file yet (no sync has run), an
    /// empty ledger of its own in a temporary folder, so that a look creates nothing beside the config (and answers
    /// where the state's folder cannot be written). Remove the scratch folder when done.
    func openLedgerToLook(_ config: GatewayConfig) throws -> (Ledger, ScratchLedgerFolder) {
        guard case .sqlite(let path) = config.state, !FileManager.default.fileExists(atPath: path) else {
            return (try openLedger(config), ScratchLedgerFolder(url: nil))
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("syncgate-look-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return (try Ledger(path: folder.appendingPathComponent("state.sqlite").path), ScratchLedgerFolder(url: folder))
        } catch {
            try? FileManager.default.removeItem(at: folder)
            Console.error("cannot make an empty ledger in \(folder.path): \(error)")
            throw ExitCode(ExitStatus.config)
        }
    }

    /// Takes the state's lock (``StateLock``) for a sync (`gateway: false`) or `syncgate run`; a lock held by
    /// another process exits 75 with its message, a lock that cannot be taken 78 (or 75 when a PostgreSQL state
    /// cannot be reached now).
    func acquire(_ lock: StateLock, gateway: Bool) throws {
        do {
            try lock.acquire(gateway: gateway)
        } catch let busy as StateLock.Busy {
            Console.error(busy.description)
            throw ExitCode(ExitStatus.retryScheduled)
        } catch let error as LedgerError {
            // The state's folder cannot be written (read-only, no permission): a setup problem, like a damaged
            // state file.
            Console.error(error.description)
            throw ExitCode(error.temporary ? ExitStatus.retryScheduled : ExitStatus.config)
        }
    }
}

extension GlobalOptions {
    /// The `--log-format` written anywhere before `--` (plain when none, or when its value is not a format): read
    /// before the arguments are parsed, so that a usage error is written in that format too.
    static func logFormat(in arguments: [String]) -> LogLine.Format {
        var format = LogLine.Format.plain
        var index = 0
        while index < arguments.count, arguments[index] != "--" {
            let word = arguments[index]
            if word == "--log-format", index + 1 < arguments.count {
                format = LogLine.Format(rawValue: arguments[index + 1]) ?? format
                index += 1
            } else if word.hasPrefix("--log-format=") {
                format = LogLine.Format(rawValue: String(word.dropFirst("--log-format=".count))) ?? format
            }
            index += 1
        }
        return format
    }

    /// The options above, which may also come before the command's name (`syncgate --config x.yaml sync`).
    /// Keep in step with the declarations above (the end-to-end tests try each one before the command).
    static let order = GlobalOptionOrder(
        valued: ["--config", "--log-format"], flags: ["--verbose", "--quiet"], shortFlags: ["v", "q"],
        commands: command(Syncgate.self)
    )

    private static func command(_ type: any ParsableCommand.Type) -> GlobalOptionOrder.Command {
        var subcommands: [String: GlobalOptionOrder.Command] = [:]
        for sub in type.configuration.subcommands {
            if let name = sub.configuration.commandName { subcommands[name] = command(sub) }
        }
        return GlobalOptionOrder.Command(subcommands)
    }
}

enum ProcessSetup {
    private static let done = Mutex(false)
    static func once(_ level: Logger.Level, format: LogLine.Format) {
        let first = done.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        signal(SIGPIPE, SIG_IGN)
        Console.logFormat = format
        LoggingSystem.bootstrap { label in RedactingLogHandler(label: label, level: level, format: format) }
    }
}

extension LogLine.Format: ExpressibleByArgument {}
