import ArgumentParser
import SyncgateCore

struct ValidateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate", abstract: "Check the config and print what it would do (with --quiet, only errors: the exit status says the rest)."
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let logger = global.makeLogger()
        let file = try global.configFile()
        let config = try global.loadConfig(logger: logger, file: file, checkingFiles: true)
        // A source folder that is not there is a mistake in the config (unless the source says it may be missing).
        let missing = config.sources.filter { !$0.optional }.compactMap { $0.checkFolder() }
        if !missing.isEmpty {
            for error in missing { Console.error(error.description) }
            throw ExitCode(ExitStatus.config)
        }
        // --quiet (a unit's ExecStartPre): the exit status says it all; nothing goes to the journal on success.
        if global.quiet { return }
        Console.out("\(file.path): OK (\(file.origin.text))")
        Console.out("state: \(config.statePath)")
        Console.out("sources:")
        for source in config.sources {
            var notes = source.followSymlinks ? " (follows links)" : ""
            if source.optional { notes += source.checkFolder() == nil ? " (optional)" : " (optional, missing now)" }
            if source.minAge > .zero { notes += " (min_age \(source.minAge.syncgateText))" }
            if source.afterSync == .delete { notes += " (after_sync: delete)" }
            Console.out("  \(source.name): \(source.path)  include \(source.include.patterns) exclude \(source.exclude.patterns)\(notes)")
            if !source.own.entries.isEmpty {
                Console.out("    passed over (syncgate's own): \(source.own.entries.map(\.description).joined(separator: ", "))")
            }
        }
        for line in ValidateCommand.overlapNotices(config) { Console.out(line) }
        Console.out("artwork: \(config.artwork.patterns)")
        Console.out("destinations:")
        for d in config.destinations {
            let r = d.settings.retry
            Console.out("  \(d.name) (\(d.type)): concurrency \(d.settings.concurrency), retries file \(r.file) / artwork \(r.artwork), backoff \(r.baseDelay.syncgateText)..\(r.maxDelay.syncgateText) jitter \(r.jitter.rawValue), attempt timeout \(d.settings.attemptTimeout.syncgateText), throttle wait \(d.settings.throttleWait.syncgateText), unavailable wait \(d.settings.unavailableWait.syncgateText), order \(d.settings.order?.description ?? "the type's default")\(limits(d.settings))")
            for line in d.details { Console.out("    \(line)") }
        }
        Console.out("routes:")
        for route in config.routes {
            let from = route.sources.map { " from \($0.joined(separator: ", "))" } ?? ""
            let after = route.afterSync.map { " (after_sync: \($0.rawValue))" } ?? ""
            let priority = route.priority != 0 ? " (priority \(route.priority))" : ""
            Console.out("  \(route.match.patterns)\(from) -> \(route.to.joined(separator: ", "))\(after)\(priority)")
        }
    }

    /// A notice per pair of sources whose folders overlap (one inside the other, or the same folder), saying what a
    /// move there waits for. Not an error: a file there is one file that both deliver.
    static func overlapNotices(_ config: GatewayConfig) -> [String] {
        let overlaps = SourceOverlaps(sources: config.sources)
        let moving = Set(config.sourcesDeletingAfterSync)
        return overlaps.pairs.map { pair in
            let outer = config.sources.first { $0.name == pair.outer }?.path ?? pair.outer
            let inner = config.sources.first { $0.name == pair.inner }?.path ?? pair.inner
            let which = pair.offset.isEmpty
                ? "sources `\(pair.outer)` and `\(pair.inner)` are the same folder (\(outer)): a file there"
                : "sources `\(pair.outer)` (\(outer)) and `\(pair.inner)` (\(inner)) overlap: a file under \(inner)"
            let what = moving.contains(pair.outer) || moving.contains(pair.inner)
                ? "is moved (after_sync: delete) only once both have delivered it everywhere they route it"
                : "is delivered by both"
            return "notice: \(which) \(what)"
        }
    }

    /// The destination's `rate`, `min_interval` and `bandwidth`, when set.
    private func limits(_ settings: DeliverySettings) -> String {
        var text = ""
        if let rate = settings.rate {
            let perSecond = rate.requestsPerSecond
            text += ", rate \(perSecond == perSecond.rounded() ? "\(Int(perSecond))" : "\(perSecond)")/s burst \(rate.burst)"
        }
        if settings.minInterval > .zero { text += ", min interval \(settings.minInterval.syncgateText)" }
        if let bandwidth = settings.bandwidth { text += ", bandwidth \(bandwidth)" }
        if settings.deleteRemote { text += ", delete_remote (max_delete \(settings.maxDelete))" }
        return text
    }
}
