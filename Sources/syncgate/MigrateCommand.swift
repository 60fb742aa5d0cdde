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
            """
    )

    @OptionGroup var global: GlobalOptions

    func run() async throws {
        let logger = global.makeLogger()
        let config = try global.loadConfig(logger: logger, readingLedgerOnly: true)
        let ledger = try global.openLedger(config)
        Console.out("\(ledger.path): \(ledger.schemaChange)")
    }
}
