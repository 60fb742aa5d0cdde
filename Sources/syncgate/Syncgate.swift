import ArgumentParser
import Foundation
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
    /// global options written before the command moved after it (``GlobalOptions/order``), a mistyped command
    /// answered with the nearest one, and usage errors written as `--log-format` asks.
    static func main() async {
        ProcessMemory.prepare(arguments: CommandLine.arguments)
        let written = Array(CommandLine.arguments.dropFirst())
        Console.logFormat = GlobalOptions.logFormat(in: written)
        if let unknown = GlobalOptions.order.unknownCommand(in: written) {
            let near = NearestName.suggestion(for: unknown.word, among: unknown.known)
            Console.error(
                "unknown command '\(unknown.word)'" + (near.map { "; did you mean '\($0)'?" } ?? " (commands: \(unknown.known.joined(separator: ", ")))"),
                fields: ["command": unknown.word, "suggestion": near ?? ""])
            Foundation.exit(ExitStatus.usage)
        }
        do {
            var command = try await asyncParseAsRoot(GlobalOptions.order.hoist(written))
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            let text = fullMessage(for: error)
            // Help and version go to standard output as they are; a usage error on standard error as one line of
            // JSON when the log format is json.
            guard Console.logFormat == .json, code != .success, !text.isEmpty else { exit(withError: error) }
            let message = text.hasPrefix("Error: ") ? String(text.dropFirst("Error: ".count)) : text
            Console.error(message.trimmingCharacters(in: .whitespacesAndNewlines), fields: ["code": Int(code.rawValue)])
            Foundation.exit(code.rawValue)
        }
    }
}
