import Foundation
import SyncgateJSON

/// How to run one destination's plugin: the program and its arguments, its environment, its settings, and the
/// limits on how long it may take.
public struct PluginSpec: Sendable {
    /// Absolute path of the program.
    public var executable: String
    /// Arguments after the program (never a secret: other users can read a process's arguments).
    public var arguments: [String]
    /// The whole environment the plugin gets.
    public var environment: [String: String]
    /// The folder it runs in (the config's).
    public var directory: String
    /// The destination's name.
    public var destination: String
    /// The `settings:` mapping, handed over in `configure`.
    public var settings: JSONValue
    /// The most `hello` and `configure` may take each.
    public var startTimeout: Duration
    /// The most the plugin may stay silent about a list, delete, probe or existing-copy check (a put is bounded by
    /// the destination's `attempt_timeout`).
    public var answerTimeout: Duration
    /// How soon a cancelled request must end before the plugin is taken for hung.
    public var cancelGrace: Duration
    /// The most a whole listing may take, however steadily the plugin streams it (`list_timeout`).
    public var listTimeout: Duration = PluginSpec.defaultListTimeout
    public static let defaultListTimeout: Duration = .seconds(600)
    /// The destination's `concurrency` (requests in flight at most) and `attempt_timeout`, told in `hello`.
    public var concurrency: Int = 4
    /// `one_writer: true` in the config: one instance of a fleet at a time works on the destination, whatever the
    /// plugin declares (``PluginCapabilities/oneWriter``).
    public var oneWriter = false
    public var attemptTimeout: Duration = .seconds(600)
    /// Turns a key under `settings` that `configure` refused, and what it said, into a located config error text
    /// (`plugins.yaml:9:7: destinations[0].settings.url: ...`).
    public var locate: @Sendable (_ key: String, _ message: String) -> String
    /// Capabilities the destination's delivery keys need of the plugin (`bandwidth` needs `paces`): a plugin that
    /// does not declare one is refused at its start (blocked; a config error in `syncgate validate`).
    public var requirements: [PluginRequirement] = []
    /// How messages name the plugin (see ``label``).
    public var name: String

    public init(
        executable: String, arguments: [String] = [], environment: [String: String], directory: String, destination: String,
        settings: JSONValue = .object([:]), startTimeout: Duration = .seconds(30), answerTimeout: Duration = .seconds(60),
        cancelGrace: Duration = .seconds(2),
        locate: @escaping @Sendable (String, String) -> String = { key, message in "settings.\(key): \(message)" }
    ) {
        self.executable = executable
        self.arguments = arguments
        self.environment = environment
        self.directory = directory
        self.destination = destination
        self.settings = settings
        self.startTimeout = startTimeout
        self.answerTimeout = answerTimeout
        self.cancelGrace = cancelGrace
        self.locate = locate
        self.name = PluginSpec.name(executable: executable, arguments: arguments, directory: directory)
    }

    /// "plugin 'syncgate-destination-webhook'": how messages name it.
    public var label: String { "plugin '\(name)'" }

    /// The name of the program or, when it is an interpreter (`node`, `python3`, `bash`, `env`...), of the script
    /// it runs (`[node, webdav.js]` is `webdav.js`): the first argument that is not an option (nor, for `env`, a
    /// variable or an interpreter's name) and names a file (relative to `directory`); for Python's `-m MODULE`, the
    /// module (`[python3, -m, webdav_plugin]` is `webdav_plugin`).
    static func name(executable: String, arguments: [String], directory: String) -> String {
        let program = (executable as NSString).lastPathComponent
        guard isInterpreter(program) else { return program }
        var python = isPython(program)
        for (index, argument) in arguments.enumerated() {
            if python, argument == "-m", index + 1 < arguments.count, !arguments[index + 1].hasPrefix("-") { return arguments[index + 1] }
            if isInterpreter(argument) { python = python || isPython(argument) }
            if argument.hasPrefix("-") || argument.contains("=") || isInterpreter(argument) { continue }
            let path = argument.hasPrefix("/") ? argument : (directory as NSString).appendingPathComponent(argument)
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), !isFolder.boolValue else { return program }
            return (argument as NSString).lastPathComponent
        }
        return program
    }

    static let interpreters: Set<String> = [
        "node", "nodejs", "deno", "bun", "python", "pypy", "ruby", "perl", "php", "bash", "sh", "dash", "zsh", "ksh", "fish",
        "lua", "luajit", "tclsh", "rscript", "pwsh", "java", "env",
    ]

    /// `python3.12` is `python`: the name without the digits and dots of its version.
    static func isInterpreter(_ name: String) -> Bool {
        interpreters.contains(base(name))
    }

    /// Python (or PyPy), whose `-m MODULE` names the plugin.
    static func isPython(_ name: String) -> Bool {
        ["python", "pypy"].contains(base(name))
    }

    static func base(_ name: String) -> String {
        String((name as NSString).lastPathComponent.reversed().drop { $0.isNumber || $0 == "." }.reversed()).lowercased()
    }
}
