import ArgumentParser
import Foundation
import SyncgateCore

struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Compare what the destinations hold with the files the ledger says are synced.",
        discussion: """
            Lists each destination once and reports every synced file whose copy is missing (-) or different (*), \
            and every name at the destination the ledger does not know (+). Exit 0 when nothing was found, 1 with \
            findings, 75 when a destination could not be listed. --repair marks missing and different copies \
            pending, so that the next sync sends them again; nothing is ever deleted.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: "Only this destination (repeat for several; default: every destination).", completion: DestinationCompletion.kind)
    var destination: [String] = []

    @Flag(name: .long, help: "Mark missing and different copies pending, so that the next sync sends them again.")
    var repair = false

    @Flag(name: .long, help: "Also read copies whole and compare their SHA-256 (a local folder).")
    var checksum = false

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    func run() async throws {
        let logger = global.makeLogger()
        let config = try global.loadConfig(logger: logger)
        for name in destination where config.destination(named: name) == nil {
            throw ValidationError("no destination named '\(name)' (known: \(config.destinations.map(\.name).joined(separator: ", ")))")
        }
        let (ledger, scratch) = try global.openLedgerToLook(config)
        defer { scratch.remove() }
        let targets = destination.isEmpty ? config.destinations : config.destinations.filter { destination.contains($0.name) }
        var reports: [VerificationReport] = []
        var unlisted: [(name: String, error: String)] = []
        var notVerifiable: [(name: String, reason: String)] = []
        for target in targets {
            let verifier = Verifier(name: target.name, destination: target.destination, ledger: ledger, checksum: checksum,
                                    repair: repair || target.settings.check.repair, limits: target.limits)
            do {
                let report = try await verifier.run()
                reports.append(report)
                if !json {
                    for finding in report.findings { Console.out(finding.line) }
                    Console.out(report.summary)
                }
            } catch let error as DestinationError where error.code == VerificationFinding.notVerifiable {
                notVerifiable.append((target.name, error.message))
                if !json { Console.out("\(target.name): not checked: \(error.message)") }
            } catch {
                let text = DeliveryLayer.describe(error)
                unlisted.append((target.name, text))
                if !json { Console.error("\(target.name): cannot check: \(text)") }
            }
            await target.finishIfBuilt()
        }
        let findings = reports.contains { !$0.isClean }
        let status = findings ? ExitStatus.failed : (unlisted.isEmpty ? ExitStatus.success : ExitStatus.retryScheduled)
        if json {
            Console.out(ReportJSON.encode([
                "destinations": reports.map(\.json),
                "not_checked": unlisted.map { ["destination": $0.name, "error": $0.error] },
                "not_verifiable": notVerifiable.map { ["destination": $0.name, "reason": $0.reason] },
                "clean": !findings && unlisted.isEmpty,
                "exit_code": Int(status),
            ] as [String: Any], pretty: true))
        }
        if status != ExitStatus.success { throw ExitCode(status) }
    }
}
