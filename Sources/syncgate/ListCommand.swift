import ArgumentParser
import Foundation
import SyncgateCore

struct ListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ls", abstract: "List what a destination holds.")

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: "The destination.", completion: DestinationCompletion.kind)
    var destination: String?

    @Argument(help: ArgumentHelp("The destination, as --destination says it (default: the config's only one).", valueName: "destination"),
              completion: DestinationCompletion.kind)
    var named: String?

    func validate() throws {
        if let named, let destination, named != destination {
            throw ValidationError("two destinations given ('\(named)' and --destination '\(destination)'): ls lists one")
        }
    }

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @Flag(name: .customShort("l"), help: "Long listing: size and modification time (UTC) before each name, where the destination says.")
    var long = false

    func run() async throws {
        let logger = global.makeLogger()
        let config = try global.loadConfig(logger: logger)
        let known = config.destinations.map(\.name).joined(separator: ", ")
        guard let destination = named ?? destination ?? (config.destinations.count == 1 ? config.destinations[0].name : nil) else {
            throw ValidationError("name the destination to list: syncgate ls NAME (known: \(known))")
        }
        guard let target = config.destination(named: destination) else {
            throw ValidationError("no destination named '\(destination)' (known: \(known))")
        }
        let listing: RemoteListing
        do {
            listing = try await target.destination.list()
        } catch {
            await target.destination.finish()
            Console.error("\(destination): cannot list: \(DeliveryLayer.describe(error))")
            throw ExitCode(ExitStatus.failed)
        }
        await target.destination.finish()
        if json {
            Console.out(ReportJSON.encode([
                "destination": destination,
                "files": listing.entries.map {
                    ["name": $0.name, "size": $0.size.map { $0 as Any } ?? NSNull(), "modified": ReportJSON.time($0.modified)] as [String: Any]
                },
                "space_available": listing.spaceAvailable.map { $0 as Any } ?? NSNull(),
            ] as [String: Any], pretty: true))
            return
        }
        for entry in listing.entries {
            let name = TerminalText.escape(entry.name)
            if long {
                // As `rclone lsl` and `aws s3 ls`: size, time, name; `-` where the destination does not say.
                let size = entry.size.map { String($0) } ?? "-"
                let time = entry.modified.map(HumanTime.utc) ?? "-".leftPadded(19)
                Console.out(size.leftPadded(12) + "  " + time + "  " + name)
            } else {
                Console.out(entry.size.map { String($0).leftPadded(12) + "  " + name } ?? name)
            }
        }
        var footer = "\(listing.entries.count) file(s)"
        if let space = listing.spaceAvailable { footer += ", \(ByteSize.format(space)) available" }
        Console.out(footer)
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
