import ArgumentParser
import Foundation
import Logging
import SyncgateCore
import Synchronization

/// Options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: "The config file.")
    var config: String = "plugins.yaml"

    @Flag(name: [.short, .long], help: "Log more (repeat for debug).")
    var verbose: Int

    @Flag(name: [.short, .long], help: "Log only errors.")
    var quiet = false

    @Option(name: .long, help: "Log lines as plain text (plain) or one JSON object per line for log shippers (json).")
    var logFormat: RedactingLogHandler.Format = .plain

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

    /// Loads the config; config errors print one line each, `file:line:col: key: message`, and exit 78.
    func loadConfig(logger: Logger, checkingFiles: Bool = false, readingLedgerOnly: Bool = false) throws -> GatewayConfig {
        do {
            return try GatewayConfig.load(
                path: config, registry: BuiltinPlugins.registry, logger: logger, checkingFiles: checkingFiles,
                readingLedgerOnly: readingLedgerOnly)
        } catch let error as ConfigError {
            let all = error.all
            for each in all { Console.error(each.description) }
            if all.count > 1 { Console.error("\(all.count) errors in \(config)") }
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
    static func once(_ level: Logger.Level, format: RedactingLogHandler.Format) {
        let first = done.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        signal(SIGPIPE, SIG_IGN)
        LoggingSystem.bootstrap { label in RedactingLogHandler(label: label, level: level, format: format) }
    }
}

extension RedactingLogHandler.Format: ExpressibleByArgument {}
