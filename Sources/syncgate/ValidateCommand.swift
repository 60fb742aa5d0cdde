import ArgumentParser
import SyncgateCore

struct ValidateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate", abstract: "Check the config and print what it would do."
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let logger = global.makeLogger()
        let config = try global.loadConfig(logger: logger)
        Console.out("\(global.config): OK")
        Console.out("state: \(config.statePath)")
        Console.out("sources:")
        for source in config.sources {
            Console.out("  \(source.name): \(source.path)  include \(source.include.patterns) exclude \(source.exclude.patterns)\(source.followSymlinks ? " (follows links)" : "")")
        }
        Console.out("artwork: \(config.artwork.patterns)")
        Console.out("destinations:")
        for d in config.destinations {
            let r = d.settings.retry
            Console.out("  \(d.name) (\(d.type)): concurrency \(d.settings.concurrency), retries file \(r.file) / artwork \(r.artwork), backoff \(r.baseDelay.syncgateText)..\(r.maxDelay.syncgateText) jitter \(r.jitter.rawValue), attempt timeout \(d.settings.attemptTimeout.syncgateText)")
            await d.destination.finish()
        }
        Console.out("routes:")
        for route in config.routes {
            let from = route.sources.map { " from \($0.joined(separator: ", "))" } ?? ""
            Console.out("  \(route.match.patterns)\(from) -> \(route.to.joined(separator: ", "))")
        }
    }
}
