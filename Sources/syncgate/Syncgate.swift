import ArgumentParser
import SyncgateCore

@main
struct Syncgate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncgate",
        abstract: "Deliver files from local folders to head units, object storage, spreadsheets and folders, reliably.",
        discussion: """
            Exit codes: 0 everything routed is synced; 1 some file failed; 75 only retryable failures remain \
            (scheduled); 64 usage; 78 config error; 130 interrupted.
            """,
        version: BuildInfo.versionLine,
        subcommands: [
            SyncCommand.self, RunCommand.self, StatusCommand.self, ValidateCommand.self, RetryCommand.self, ForgetCommand.self,
            ListCommand.self, RemoveCommand.self, CheckCommand.self, MigrateCommand.self, PluginCommand.self,
        ],
        defaultSubcommand: nil
    )

    /// ArgumentParser's own `main`, after what must happen before any thread starts (``ProcessMemory``), with
    /// global options written before the command moved after it (``GlobalOptions/order``).
    static func main() async {
        ProcessMemory.prepare(arguments: CommandLine.arguments)
        await main(GlobalOptions.order.hoist(Array(CommandLine.arguments.dropFirst())))
    }
}
