import ArgumentParser
import Foundation
import Logging
import SyncgateCore

struct RetryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Re-attempt failed files now (also permanent failures and given-up files)."
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: "Only this destination.", completion: DestinationCompletion.kind)
    var destination: String?

    @Flag(name: .long, help: "One JSON object per event on standard output.")
    var json = false

    @Argument(help: "Relative paths to retry (default: every failed file).")
    var paths: [String] = []

    func run() async throws {
        let summary = try await SyncRunner(global: global, json: json, dryRun: false).run(
            SyncOptions(onlyFailed: true, destinations: destination.map { [$0] } ?? []),
            before: { ledger in
                // A path named that has no failed row: say what it is, rather than only count nothing retried.
                if !paths.isEmpty {
                    let rows = try await ledger.entries(paths: paths).filter { destination == nil || $0.destination == destination }
                    for path in paths where !rows.contains(where: { $0.file.path == path && $0.status == .failed }) {
                        let states = rows.filter { $0.file.path == path }.map { "\($0.status.rawValue) at \($0.destination)" }
                        let what = states.isEmpty ? "not in the ledger\(destination.map { " for \($0)" } ?? "")" : states.joined(separator: ", ")
                        Console.log(.warning, "\(TerminalText.escape(path)): nothing failed to retry there (\(what))", fields: ["path": path])
                    }
                }
                let n = try await ledger.requestRetry(destination: destination, paths: paths, at: Date())
                let unblocked = paths.isEmpty ? try await ledger.unblock(destination: destination, at: Date()) : 0
                if !json {
                    var note = "retrying \(n) failed file(s)"
                    if unblocked > 0 { note += "; trying \(unblocked) blocked destination(s) again" }
                    Console.log(.notice, note, fields: ["files": n, "destinations": unblocked])
                }
            },
            handOverToGateway: true
        )
        if summary.exitCode != 0 { throw ExitCode(summary.exitCode) }
    }
}
