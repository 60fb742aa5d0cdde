import ArgumentParser
import Foundation
import SyncgateCore

struct MigrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Create or upgrade the ledger's schema (SQLite or PostgreSQL) and say what was done.",
        discussion: """
            Prints "created schema N", "upgraded schema M to N" or "already at schema N". A schema newer than \
            this syncgate reads is refused and left untouched (exit 78); a PostgreSQL server that cannot be \
            reached exits 75. Every other command does the same on its own when it opens the ledger.

            --import FILE copies what an SQLite state file knows (every file's status, attempts, receipt and \
            hash, the destinations' states, resumable uploads) into the config's ledger, which no run may have \
            written to yet: moving a config to a PostgreSQL state then sends nothing again that was delivered. \
            One transaction: all of it or nothing. The file is locked as a sync locks it while it is read, and \
            not changed (an older schema is upgraded first, as any command does).
            """
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .customLong("import"), help: ArgumentHelp("An SQLite state file whose rows to copy into the config's (empty) ledger.", valueName: "file"),
            completion: .file(extensions: ["sqlite"]))
    var importFrom: String?

    func run() async throws {
        let logger = global.makeLogger()
        let config = try global.loadConfig(logger: logger, readingLedgerOnly: true)
        let ledger = try global.openLedger(config)
        Console.out("\(ledger.path): \(ledger.schemaChange)")
        guard let importFrom else { return }
        let file = URL(fileURLWithPath: importFrom, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)).standardizedFileURL.path
        let from = StateLocation.sqlite(path: file)
        guard from != config.state else {
            Console.error("--import \(importFrom): that is the config's own state; name the state file to copy from")
            throw ExitCode(ExitStatus.usage)
        }
        guard FileManager.default.fileExists(atPath: file) else {
            Console.error("--import \(importFrom): no such state file")
            throw ExitCode(ExitStatus.usage)
        }
        // No sync or gateway may write the file while it is read.
        let lock = StateLock(state: from)
        try global.acquire(lock, gateway: false)
        defer { lock.release() }
        let source: Ledger
        do {
            source = try Ledger(state: from)
        } catch let error as LedgerError {
            Console.error("--import: \(error.description)")
            throw ExitCode(ExitStatus.config)
        }
        do {
            let counts = try await ledger.importRows(from: source)
            Console.out("imported from \(file): \(counts)")
        } catch let error as LedgerError {
            Console.error("--import: \(error.description); nothing was imported")
            throw ExitCode(error.temporary ? ExitStatus.retryScheduled : ExitStatus.config)
        }
    }
}
