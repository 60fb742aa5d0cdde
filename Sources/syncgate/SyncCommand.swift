import ArgumentParser
import Foundation
import Logging
import SyncgateCore

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync", abstract: "One pass: deliver every new, changed or due file to its destinations."
    )

    @OptionGroup var global: GlobalOptions

    @Flag(name: .long, help: "Print the plan per file and destination with the reason, change nothing.")
    var dryRun = false

    @Flag(name: .long, help: "Only re-attempt files that failed before.")
    var onlyFailed = false

    @Option(name: .long, help: "Only this destination (repeatable).", completion: DestinationCompletion.kind)
    var destination: [String] = []

    @Flag(name: .long, help: "One JSON object per event on standard output.")
    var json = false

    @Option(name: .long, help: ArgumentHelp("For this run, the most copies deleted per destination for files removed from the sources (delete_remote), instead of each destination's max_delete.", valueName: "n"))
    var maxDelete: Int?

    @Flag(name: .long, help: "The sources are as they should be: delete the copies of files gone from a source held back (its folder changed, it was found empty, or it lost more than max_delete_fraction of its files), and record the sources as this run finds them.")
    var acceptSourceChanges = false

    func validate() throws {
        if let maxDelete, maxDelete < 0 { throw ValidationError("--max-delete must be >= 0") }
    }

    func run() async throws {
        var options = SyncOptions(dryRun: dryRun, onlyFailed: onlyFailed, destinations: destination)
        options.maxDelete = maxDelete
        options.acceptSourceChanges = acceptSourceChanges
        let summary = try await SyncRunner(global: global, json: json, dryRun: dryRun).run(options)
        if summary.exitCode != 0 { throw ExitCode(summary.exitCode) }
    }
}

/// Runs a sync pass for `sync` and `retry`: config, lock, signals, output.
struct SyncRunner {
    let global: GlobalOptions
    let json: Bool
    let dryRun: Bool

    /// Runs a pass. `before` changes the ledger first (`retry`); with `handOverToGateway`, a gateway holding the state
    /// gets that change instead of a pass (it acts on it within a second) and the command ends there.
    func run(_ options: SyncOptions, before: ((Ledger) async throws -> Void)? = nil, handOverToGateway: Bool = false) async throws -> SyncSummary {
        let logger = global.makeLogger()
        let json = self.json
        // Ctrl-C is handled from the start: a signal while the config loads (reading CA bundles, key files) stops
        // the run before it sends anything, with the same exit code, instead of killing the process.
        let interrupts = InterruptHandler {
            if !json {
                Console.errorRaw("\n")  // ends a progress line
                Console.log(.notice, "interrupted; finishing uploads in flight (Ctrl-C again to stop now)")
            }
        }
        let config = try global.loadConfig(logger: logger)
        for name in options.destinations where config.destination(named: name) == nil {
            throw ValidationError("no destination named '\(name)' in \(config.file) (known: \(config.destinations.map(\.name).joined(separator: ", ")))")
        }

        var temporaryState: String? = nil
        var effective = config
        if dryRun, case .sqlite(let statePath) = config.state, !FileManager.default.fileExists(atPath: statePath) {
            // A dry run changes nothing: plan against an empty ledger instead of creating the state file.
            temporaryState = NSTemporaryDirectory() + "syncgate-dry-run-\(getpid()).sqlite"
            effective.statePath = temporaryState!
        }
        defer {
            if let temporaryState {
                for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: temporaryState + suffix) }
            }
        }

        let lock = StateLock(state: config.state)
        if !dryRun {
            do {
                try lock.acquire()
            } catch let busy as StateLock.Busy {
                if busy.isGateway, handOverToGateway, let before {
                    try await before(try global.openLedger(effective))
                    Console.log(.notice, "the gateway (\(busy.holder.dropFirst("gateway ".count))) running on this state file takes it from here")
                    return SyncSummary()
                }
                Console.error(busy.description)
                throw ExitCode(ExitStatus.retryScheduled)
            } catch let error as LedgerError {
                // The state's folder cannot be written (read-only, no permission): a setup problem, like a
                // damaged state file.
                Console.error(error.description)
                throw ExitCode(error.temporary ? ExitStatus.retryScheduled : ExitStatus.config)
            }
        }
        defer { lock.release() }
        let ledger = try global.openLedger(effective)
        try await before?(ledger)

        let dryRun = self.dryRun
        let progressLine = (!json && !dryRun && Console.stderrIsTerminal && !global.quiet && global.logFormat == .plain) ? ProgressLine() : nil
        // A reader of the output that goes away (`syncgate sync --json | head -1`) ends the run as quietly as
        // SIGPIPE would, but with the ledger written.
        Console.onBrokenPipe = { interrupts.stopQuietly() }
        var options = options
        options.interruptGrace = InterruptHandler.uploadGrace
        let engine = SyncEngine(config: effective, ledger: ledger, logger: logger)
        let verbose = global.verbose > 0
        let summary: SyncSummary
        do {
            summary = try await engine.run(options, cancellation: interrupts.cancellation, observe: { event in
                if json {
                    Console.out(EventJSON.line(event))
                    return
                }
                if dryRun {
                    switch event.kind {
                    case .queued(let reason): Console.out("upload  \(event.destination)  \(TerminalText.escape(event.file.path))  (\(TerminalText.escape(reason.description)))")
                    case .skipped(let reason): if verbose { Console.out("skip    \(event.destination)  \(TerminalText.escape(event.file.path))  (\(TerminalText.escape(reason.description)))") }
                    case .failed(let failure): Console.out("fail    \(event.destination)  \(TerminalText.escape(event.file.path))  (\(TerminalText.escape(failure.message)))")
                    default: break
                    }
                    return
                }
                progressLine?.handle(event)
                switch event.kind {
                case .failed(let failure) where !failure.isCancellation:
                    if progressLine != nil { Console.errorRaw("\r\u{1B}[2K") }
                    Console.error("\(event.destination): \(TerminalText.escape(event.file.path)): failed (\(failure.failureClass.name)): \(TerminalText.escape(failure.message))",
                                  fields: LogFields.file(event).merging(LogFields.failure(failure)) { $1 })
                case .retrying(let attempt, let failure, let delay) where verbose:
                    var fields = LogFields.file(event).merging(LogFields.failure(failure)) { $1 }
                    fields["attempts"] = attempt
                    fields["retry_in_seconds"] = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
                    Console.log(.info, "\(event.destination): \(TerminalText.escape(event.file.path)): attempt \(attempt) failed (\(TerminalText.escape(failure.message))); retrying in \(delay.syncgateText)",
                                fields: fields)
                case .synced(_, let attempts, let uploaded) where verbose:
                    var fields = LogFields.file(event)
                    fields["attempts"] = attempts
                    Console.log(.info, "\(event.destination): \(TerminalText.escape(event.file.path)): \(uploaded ? "synced" : "already there")", fields: fields)
                case .gone where verbose:
                    Console.log(.info, "\(event.destination): \(TerminalText.escape(event.file.path)): \(SourceGone.reason)", fields: LogFields.file(event))
                default: break
                }
            }, warn: { warning in
                if json {
                    Console.out(ReportJSON.encode(["event": warning.sourceMissing ? "error" : "warning", "source": warning.source,
                                                 "path": warning.relativePath, "message": warning.message]))
                } else if warning.sourceMissing {
                    Console.log(.error, "source \(warning.source): \(TerminalText.escape(warning.message))", plainPrefix: "error: ",
                                fields: ["source": warning.source])
                } else if !global.quiet {
                    Console.warning(TerminalText.escape(warning.description), fields: ["source": warning.source, "path": warning.relativePath])
                }
            })
            // The state file deleted or replaced after the run's last write: saved, and reported, all the same.
            try ledger.confirmStateFile()
        } catch let error as LedgerError {
            Console.error(error.description)
            // A PostgreSQL state that went away (`temporary`): the next run resumes from what was committed.
            throw ExitCode(error.stateLost ? ExitStatus.config : error.temporary ? ExitStatus.retryScheduled : ExitStatus.failed)
        }
        progressLine?.finish()
        if Console.isOutputClosed { throw ExitCode(141) }
        if json {
            Console.out(EventJSON.summaryLine(summary))
        } else if dryRun {
            Console.out("dry run: \(summary.planned) to upload, \(summary.files) files scanned; nothing was changed")
        } else if !global.quiet {
            for (index, line) in SyncRunner.summaryLines(summary).enumerated() {
                Console.log(.notice, TerminalText.escape(line), fields: index == 0 ? SyncRunner.summaryFields(summary) : [:])
            }
        }
        return summary
    }
}

extension SyncRunner {
    /// The end-of-run line's figures as typed fields (`--log-format json`).
    static func summaryFields(_ summary: SyncSummary) -> [String: Any] {
        [
            "files": summary.uploaded, "bytes": summary.bytesUploaded, "up_to_date": summary.upToDate,
            "already_there": summary.alreadyPresent, "failed": summary.failedPermanently + summary.failedRetryable,
            "retryable": summary.failedRetryable, "waiting": summary.waiting, "warnings": summary.warnings,
            "seconds": summary.seconds, "code": Int(summary.exitCode),
        ]
    }

    /// The end-of-run report: what was done, then each destination that was away and what waits for it.
    static func summaryLines(_ summary: SyncSummary) -> [String] {
        var line = "\(summary.uploaded) uploaded (\(ByteSize.format(summary.bytesUploaded))), \(summary.upToDate) up to date"
        if summary.alreadyPresent > 0 { line += ", \(summary.alreadyPresent) already there" }
        if summary.tooNew > 0 { line += ", \(summary.tooNew) too new (min_age), left for a later run" }
        if summary.failedPermanently + summary.failedRetryable > 0 {
            line += ", \(summary.failedPermanently + summary.failedRetryable) failed (\(summary.failedRetryable) will be retried)"
        }
        if summary.waiting > 0 { line += ", \(summary.waiting) waiting" }
        if summary.warnings > 0 { line += ", \(summary.warnings) skipped with a warning" }
        if summary.sourcesFailed > 0 { line += ", \(summary.sourcesFailed) source(s) missing" }
        if summary.moved > 0 { line += ", \(summary.moved) deleted from the sources after delivery" }
        if summary.removedFromSources > 0 { line += ", \(summary.removedFromSources) gone from the sources" }
        if summary.goneBeforeSent > 0 { line += ", \(summary.goneBeforeSent) removed from the sources before they were sent" }
        if summary.remoteDeleted > 0 { line += ", \(summary.remoteDeleted) copies of those deleted" }
        if summary.remoteDeleteFailed > 0 { line += ", \(summary.remoteDeleteFailed) copies not deleted yet (retried next run)" }
        line += String(format: " in %.1fs", summary.seconds)
        if summary.interrupted { line += "; interrupted, the rest stays pending" }
        var lines = [line]
        for limit in summary.deleteLimits {
            lines.append("\(limit.destination): \(limit.wanted) copies of files removed from the sources would be deleted, more than max_delete (\(limit.limit)); none was deleted. Check the sources (an unmounted folder?); if the removals are meant, run `syncgate sync --max-delete \(limit.wanted)` once or raise max_delete")
        }
        for hold in summary.heldBack {
            lines.append("source \(hold.source) held back: \(hold.reason); \(hold.gone) of its files are gone, none was marked removed and no copy of it was deleted. Check the source (an unmounted folder? a switched link?); if the removals are meant, run `syncgate sync --accept-source-changes` once")
        }
        for failure in summary.moveFailures.prefix(20) { lines.append("not deleted after delivery: \(failure)") }
        if summary.moveFailures.count > 20 { lines.append("... and \(summary.moveFailures.count - 20) more not deleted after delivery") }
        for away in summary.away {
            let files = "\(away.waiting) file\(away.waiting == 1 ? "" : "s") wait\(away.waiting == 1 ? "s" : "") for it"
            switch away.state {
            case .blocked:
                lines.append("\(away.name): blocked since \(Console.when(away.since)) (\(away.error)): fix its credentials or settings (or run syncgate retry); \(files)")
            default:
                lines.append("\(away.name): unavailable since \(Console.when(away.since)) (\(away.error)); \(files), sent when it answers")
            }
        }
        return lines
    }
}
