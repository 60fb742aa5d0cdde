import ArgumentParser
import Foundation
import SyncgateCore

struct ForgetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Drop failed entries from the ledger (a file still in a source is then new to the next sync)."
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: "Only this destination.", completion: DestinationCompletion.kind)
    var destination: String?

    @Argument(help: "Relative paths to forget (default: every failed file).")
    var paths: [String] = []

    func run() async throws {
        let logger = global.makeLogger()
        let config = try global.loadConfig(logger: logger, readingLedgerOnly: true)
        if let destination, config.destination(named: destination) == nil {
            throw ValidationError("no destination named '\(destination)'")
        }
        let ledger = try global.openLedger(config)
        let n = try await ledger.forgetFailed(destination: destination, paths: paths)
        Console.out("forgot \(n) failed entr\(n == 1 ? "y" : "ies")")
    }
}
