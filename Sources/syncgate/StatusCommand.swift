import ArgumentParser
import Foundation
import SyncgateCore

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "The state of every file at every destination (works while a sync runs)."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @Option(name: .long, help: "Only this destination.")
    var destination: String?

    @Flag(name: .long, help: "Only failed files.")
    var failed = false

    @Option(name: .long, help: "Also write a Prometheus textfile-collector file (atomically).")
    var prometheus: String?

    func run() async throws {
        let logger = global.makeLogger()
        let config = try global.loadConfig(logger: logger)
        if let destination, config.destination(named: destination) == nil {
            throw ValidationError("no destination named '\(destination)'")
        }
        let ledger = try global.openLedger(config)
        let report = try StatusReport.build(config: config, ledger: ledger, destination: destination, failedOnly: failed)
        if let prometheus {
            do {
                try PrometheusWriter.write(report, to: prometheus)
            } catch {
                Console.error("cannot write \(prometheus): \(error.localizedDescription)")
                throw ExitCode(ExitStatus.failed)
            }
        }
        for d in config.destinations { await d.destination.finish() }
        if json { Console.out(report.json) } else { FileHandle.standardOutput.write(Data(report.text.utf8)) }
    }
}
