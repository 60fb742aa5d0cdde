import ArgumentParser
import Foundation
import SyncgateCore

struct RemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm", abstract: "Delete remote files by name, with a result per name."
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: "The destination.", completion: DestinationCompletion.kind)
    var destination: String

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @Argument(help: "Remote names to delete.")
    var names: [String]

    func validate() throws {
        if names.isEmpty { throw ValidationError("name at least one remote file to delete") }
    }

    func run() async throws {
        let logger = global.makeLogger()
        let config = try global.loadConfig(logger: logger)
        guard let target = config.destination(named: destination) else {
            throw ValidationError("no destination named '\(destination)' (known: \(config.destinations.map(\.name).joined(separator: ", ")))")
        }
        let layer = DeliveryLayer(destinationName: target.name, destination: target.destination, settings: target.settings,
                                  limits: target.limits)
        let failures = await layer.deleteMany(names)
        await target.destination.finish()
        // A deleted file that is still in a source is missing at the destination now: the ledger forgets it.
        let deleted = names.filter { failures[$0] == nil }
        if !deleted.isEmpty, let ledger = try? Ledger(state: config.state) {
            try? await ledger.forgetRemote(destination: target.name, remoteNames: deleted)
        }
        if json {
            Console.out(ReportJSON.encode([
                "destination": destination,
                "results": names.map { name -> [String: Any] in
                    if let failure = failures[name] {
                        return ["name": name, "deleted": false, "error": failure.message, "class": failure.failureClass.name]
                    }
                    return ["name": name, "deleted": true]
                },
            ] as [String: Any], pretty: true))
        } else {
            for name in names {
                if let failure = failures[name] { Console.out("failed   \(name): \(failure.message)") } else { Console.out("deleted  \(name)") }
            }
        }
        if !failures.isEmpty { throw ExitCode(ExitStatus.failed) }
    }
}
