import ArgumentParser
import Foundation
import SyncgateCore

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "The state of every destination and every file not synced (works while a sync runs).",
        discussion: """
            With PATH arguments: those files at every destination, synced ones included. With --check: exit 1 when a \
            file failed or a destination is blocked (for monitoring), 0 otherwise.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @Option(name: .long, help: "Only this destination.")
    var destination: String?

    @Flag(name: .long, help: "Only failed files.")
    var failed = false

    @Flag(name: .long, help: "With --json: every ledger row, one JSON object per line (NDJSON), streamed.")
    var all = false

    @Flag(name: .long, help: "Exit 1 when a file failed or a destination is blocked.")
    var check = false

    @Option(name: .long, help: "Also write a Prometheus textfile-collector file (atomically).")
    var prometheus: String?

    @Argument(help: "Files to show at every destination: paths relative to their source, or paths of files inside a source folder.")
    var paths: [String] = []

    func validate() throws {
        if all && !json { throw ValidationError("--all streams JSON lines: use it with --json") }
        if all && !paths.isEmpty { throw ValidationError("--all lists every row: leave out the paths") }
    }

    func run() async throws {
        let logger = global.makeLogger()
        let config = try global.loadConfig(logger: logger, readingLedgerOnly: true)
        if let destination, config.destination(named: destination) == nil {
            throw ValidationError("no destination named '\(destination)' (known: \(config.destinations.map(\.name).joined(separator: ", ")))")
        }
        let ledger = try global.openLedger(config)
        if all {
            try await ledger.forEachEntry(destination: destination) { entry in
                Console.out(ReportJSON.encode(StatusReport.fileObject(entry)))
                if Console.isOutputClosed { throw ExitCode(141) }
            }
            return
        }
        let report = try await StatusReport.build(
            config: config, ledger: ledger, destination: destination, failedOnly: failed, paths: paths.map { relativePath($0, config: config) })
        if let prometheus {
            do {
                try PrometheusWriter.write(report, to: prometheus)
            } catch {
                Console.error("cannot write \(prometheus): \(error.localizedDescription)")
                throw ExitCode(ExitStatus.failed)
            }
        }
        if json { Console.out(report.json) } else { Console.outRaw(report.text) }
        if check && report.needsAttention { throw ExitCode(ExitStatus.failed) }
    }

    /// A path as the ledger keeps it: relative to its source folder. A path to a file inside a source folder (from
    /// here, or absolute) is made relative to it; anything else is taken as already relative.
    private func relativePath(_ argument: String, config: GatewayConfig) -> String {
        let absolute = URL(fileURLWithPath: argument, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
            .standardizedFileURL.path
        for source in config.sources where absolute.hasPrefix(source.path + "/") {
            return String(absolute.dropFirst(source.path.count + 1))
        }
        return argument.hasPrefix("./") ? String(argument.dropFirst(2)) : argument
    }
}
