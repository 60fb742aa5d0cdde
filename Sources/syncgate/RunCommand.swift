import ArgumentParser
import Foundation
import Logging
import SyncgateCore
import SyncgateHTTP
import Synchronization

/// `syncgate run`: the gateway as a service. One process per config: it holds the state file, sends everything
/// that waits, then each file once it settles, probes destinations that are away, retries on schedule, and can be
/// looked at while it runs (`status`, and the HTTP page when `http:` is set).
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run as a service: watch the sources and deliver each file once it settles, until stopped.",
        discussion: """
            SIGTERM or SIGINT: no new work, uploads in flight finish (bounded), exit 0. SIGHUP: read the config \
            again (a config that does not validate is logged and the old one stays). Under systemd (Type=notify) \
            it says READY=1, STOPPING=1 and WATCHDOG=1.
            """
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let logger = global.makeLogger()
        let descriptors = DescriptorLimit.raise()
        logger.debug("open descriptors allowed: \(descriptors)")
        var config = try global.loadConfig(logger: logger)
        let lock = StateLock(state: config.state)
        try global.acquire(lock, gateway: true)
        defer { lock.release() }
        let ledger = try global.openLedger(config)
        let notifier = SystemdNotifier()
        let control = GatewayControl()
        let file = config.file
        let signals = ServiceSignals(onStop: { control.stop() }, onReload: { control.reload(file: file, logger: logger) })
        let watchdog = notifier.watchdogInterval.map { interval in
            Task {
                while !Task.isCancelled {
                    notifier.notify("WATCHDOG=1")
                    try? await Task.sleep(for: interval)
                }
            }
        }
        defer { watchdog?.cancel() }
        withExtendedLifetime(signals) {}

        // The status page (when `http:` is set) serves every gateway of this process, across reloads; it is made
        // before the first pass so that the delivery counters reach its /metrics.
        let observed = CurrentGateway()
        let trimmer = Task {
            // What the passes since the last look freed goes back to the system (ProcessMemory).
            var seen = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                let passes = observed.figures.passes
                if passes != seen {
                    seen = passes
                    ProcessMemory.trim()
                }
            }
        }
        defer { trimmer.cancel() }
        var server: Task<Void, any Error>? = nil
        if let http = config.http {
            var statusServer = StatusServer(settings: http, gateway: observed, logger: logger)
            statusServer.build = BuildInfo.description
            server = Task {
                do {
                    try await statusServer.run()
                } catch is CancellationError {
                } catch {
                    logger.error("the status page cannot listen on \(http.host):\(http.port): \(error); the gateway goes on without it")
                }
            }
        }
        defer { server?.cancel() }

        while true {
            let gateway = Gateway(config: config, ledger: ledger, logger: logger)
            control.attach(gateway, statePath: config.statePath)
            observed.set(gateway)
            // The first pass starts at once, beside the watches being set; once they are, one more pass finds what
            // was written in between (after that, the watches report every change).
            let watcher: SourceWatcher?
            do {
                watcher = try SourceWatcher(sources: config.sources, settle: config.gateway.settle, logger: logger)
            } catch {
                logger.error("cannot watch the sources (\(error)); files are found by the rescan every \(config.gateway.rescanInterval.syncgateText)")
                watcher = nil
            }
            let watching = Task {
                guard let watcher else { return }
                while !watcher.isWatching && !Task.isCancelled { try? await Task.sleep(for: .milliseconds(20)) }
                gateway.watchesAreSet()
                gateway.rescanAll(reason: "the watches are set")
                for await event in watcher.events {
                    switch event {
                    case .files(let files), .removed(let files): gateway.filesChanged(files)
                    case .rescan(let reason): gateway.rescanAll(reason: reason)
                    }
                }
            }
            if watcher == nil { gateway.watchesAreSet() }
            let rescanInterval = config.gateway.rescanInterval
            let rescans = Task {
                while !Task.isCancelled {
                    try await Task.sleep(for: rescanInterval)
                    gateway.rescanAll(reason: "the periodic safety rescan (rescan_interval)")
                }
            }
            notifier.notify("READY=1\nSTATUS=delivering to \(config.destinations.count) destination(s)")
            logger.info("gateway running on \(config.statePath) with \(config.destinations.count) destination(s)")
            do {
                try await gateway.run(settling: { watcher?.queueDepth ?? 0 })
                try ledger.confirmStateFile()
            } catch let error as LedgerError {
                rescans.cancel()
                watcher?.stop()
                watching.cancel()
                Console.error(error.description)
                // A PostgreSQL state that went away (`temporary`): the next run resumes from what was committed.
                throw ExitCode(error.stateLost ? ExitStatus.config : error.temporary ? ExitStatus.retryScheduled : ExitStatus.failed)
            }
            rescans.cancel()
            watcher?.stop()
            watching.cancel()
            observed.set(nil)
            guard let next = control.takeReloaded() else { break }
            notifier.notify("RELOADING=1")
            if next.http != config.http {
                logger.warning("SIGHUP: http: changes take effect when syncgate run starts again")
            }
            config = next
            logger.info("config read again from \(config.file)")
        }
        notifier.notify("STOPPING=1")
        withExtendedLifetime(signals) {}
    }
}

/// What the signals do to the running gateway: stop it, or swap its config for one that validates.
final class GatewayControl: Sendable {
    private struct State {
        var gateway: Gateway?
        var statePath = ""
        var reloaded: GatewayConfig?
        var stopping = false
    }

    private let state = Mutex(State())

    func attach(_ gateway: Gateway, statePath: String) {
        let stopNow: Bool = state.withLock { state in
            state.gateway = gateway
            state.statePath = statePath
            return state.stopping
        }
        if stopNow { gateway.stop() }
    }

    func stop() {
        let current: Gateway? = state.withLock { state in
            state.stopping = true
            state.reloaded = nil
            return state.gateway
        }
        current?.stop()
    }

    /// Reads the config again; when it validates (and keeps the same state file), the gateway drains and starts
    /// again with it. When it does not, the error is logged with its location and the old config stays in force.
    /// `file` is the one the gateway started with (a reload never looks for another).
    func reload(file: String, logger: Logger) {
        let next: GatewayConfig
        do {
            next = try GatewayConfig.load(path: file, registry: BuiltinPlugins.registry, logger: logger)
        } catch let error as ConfigError {
            let errors = error.all.map(\.description).joined(separator: "; ")
            logger.error("SIGHUP: the config does not validate, the old one stays in force: \(errors)")
            return
        } catch {
            logger.error("SIGHUP: the config cannot be read, the old one stays in force: \(error)")
            return
        }
        let current: Gateway? = state.withLock { state in
            guard !state.stopping else { return nil }
            guard next.statePath == state.statePath else {
                logger.error("SIGHUP: the new config names another state file (\(next.statePath)); restart syncgate run to change it. The old config stays in force")
                return nil
            }
            state.reloaded = next
            return state.gateway
        }
        current?.stop()
    }

    /// The config to start again with, once the gateway drained for a reload (nil: it stopped for good).
    func takeReloaded() -> GatewayConfig? {
        state.withLock { state in
            defer { state.reloaded = nil }
            return state.stopping ? nil : state.reloaded
        }
    }
}
