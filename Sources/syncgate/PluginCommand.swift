import ArgumentParser
import Foundation
import SyncgateCore
import SyncgateExec
import SyncgateJSON

/// `syncgate plugin check -- PROGRAM [ARGS]`: the conformance check of an external plugin (docs/plugins.md).
struct PluginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugin", abstract: "Tools for external destination plugins.", subcommands: [Check.self]
    )

    struct Check: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Run the conformance check against a plugin program; exit 1 on a violation.",
            discussion: "Example: syncgate plugin check -- examples/plugins/folder/syncgate-destination-folder"
        )

        @OptionGroup var global: GlobalOptions

        @Option(name: .long, help: "The settings handed to the plugin, as a JSON object (default: {\"path\": a temporary folder}).")
        var settings: String?

        @Option(name: .long, help: "The cancel grace, in seconds.")
        var cancelGrace: Double = 2

        @Argument(parsing: .postTerminator, help: "The program and its arguments.")
        var command: [String] = []

        func run() async throws {
            let logger = global.makeLogger()
            guard let first = command.first else {
                Console.error("plugin check: name the program after --: syncgate plugin check -- PROGRAM [ARGS]")
                throw ExitCode(ExitStatus.usage)
            }
            let here = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            let environment = ProcessInfo.processInfo.environment
            guard let program = PluginResolver.program(forCommand: first, configDirectory: here, environment: environment) else {
                Console.error("plugin check: no program '\(first)', or it cannot be run")
                throw ExitCode(ExitStatus.usage)
            }
            let scratch = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("syncgate-plugin-check-out-\(UUID().uuidString.prefix(8))")
            defer { try? FileManager.default.removeItem(at: scratch) }
            let settingsValue: JSONValue
            if let settings {
                guard let parsed = try? JSONParser.parse(settings), case .object = parsed else {
                    Console.error("plugin check: --settings must be a JSON object")
                    throw ExitCode(ExitStatus.usage)
                }
                settingsValue = parsed
            } else {
                settingsValue = ["path": .string(scratch.path)]
            }
            // The environment a destination's plugin gets (docs/plugins.md), with no `env:` of a config.
            var env = environment.filter { ExecDestination.inherited.contains($0.key) || $0.key.hasPrefix("LC_") }
            env["SYNCGATE_DESTINATION"] = "check"
            env["SYNCGATE_PLUGIN_PROTOCOL"] = "1"
            let spec = PluginSpec(
                executable: program, arguments: Array(command.dropFirst()), environment: env, directory: here.path, destination: "check",
                settings: settingsValue, startTimeout: .seconds(30), answerTimeout: .seconds(60),
                cancelGrace: .milliseconds(Int64(cancelGrace * 1000))
            )
            var settingKeys: [String] = []
            if case .object(let object) = settingsValue { settingKeys = object.keys }
            Console.out("checking \(spec.label): \(program)\(command.count > 1 ? " " + command.dropFirst().joined(separator: " ") : "") (protocol \(PluginProtocol.versions.map(String.init).joined(separator: ",")))")
            Console.out("  runs in \(here.path) (this folder; config_dir in configure), destination \"check\", settings with the keys [\(settingKeys.joined(separator: ", "))]")
            Console.out("  environment: \(env.keys.sorted().joined(separator: ", ")) (nothing else of this shell's)")
            let passed = await PluginChecker(spec: spec, logger: logger).run { step in Console.out(step.line) }
            Console.out(passed ? "plugin check: passed" : "plugin check: FAILED")
            if !passed { throw ExitCode(ExitStatus.failed) }
        }
    }
}
