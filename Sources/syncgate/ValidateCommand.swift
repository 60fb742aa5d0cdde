import ArgumentParser
import SyncgateCore

struct ValidateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate", abstract: "Check the config and print what it would do."
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let logger = global.makeLogger()
        let config = try global.loadConfig(logger: logger, checkingFiles: true)
        // A source folder that is not there is a mistake in the config (unless the source says it may be missing).
        let missing = config.sources.filter { !$0.optional }.compactMap { $0.checkFolder() }
        if !missing.isEmpty {
            for error in missing { Console.error(error.description) }
            throw ExitCode(ExitStatus.config)
        }
        Console.out("\(global.config): OK")
        Console.out("state: \(config.statePath)")
        Console.out("sources:")
        for source in config.sources {
            var notes = source.followSymlinks ? " (follows links)" : ""
            if source.optional { notes += source.checkFolder() == nil ? " (optional)" : " (optional, missing now)" }
            Console.out("  \(source.name): \(source.path)  include \(source.include.patterns) exclude \(source.exclude.patterns)\(notes)")
        }
        Console.out("artwork: \(config.artwork.patterns)")
        Console.out("destinations:")
        for d in config.destinations {
            let r = d.settings.retry
            Console.out("  \(d.name) (\(d.type)): concurrency \(d.settings.concurrency), retries file \(r.file) / artwork \(r.artwork), backoff \(r.baseDelay.syncgateText)..\(r.maxDelay.syncgateText) jitter \(r.jitter.rawValue), attempt timeout \(d.settings.attemptTimeout.syncgateText), throttle wait \(d.settings.throttleWait.syncgateText)")
            for line in d.details { Console.out("    \(line)") }
        }
        Console.out("routes:")
        for route in config.routes {
            let from = route.sources.map { " from \($0.joined(separator: ", "))" } ?? ""
            Console.out("  \(route.match.patterns)\(from) -> \(route.to.joined(separator: ", "))")
        }
    }
}
