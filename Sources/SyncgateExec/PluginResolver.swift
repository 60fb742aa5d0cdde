import Foundation

/// Finds plugin programs: `command[0]` of a `type: exec` destination, and the `syncgate-destination-NAME` program
/// behind a `type: NAME` that is not built in.
public enum PluginResolver {
    /// The program of `type: NAME`: `plugins/syncgate-destination-NAME` beside the config, else the first on `PATH`.
    /// nil when there is none (or NAME is not a plain name).
    public static func program(forType type: String, configDirectory: URL, environment: [String: String]) -> String? {
        guard !type.isEmpty, type.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x5F }) else {
            return nil
        }
        let name = PluginProtocol.programPrefix + type
        let local = configDirectory.appendingPathComponent("plugins").appendingPathComponent(name).standardizedFileURL.path
        if isProgram(local) { return local }
        return onPath(name, environment: environment)
    }

    /// A command's program: a name with a `/` resolves against the config's folder; a bare name is looked up on
    /// `PATH`. nil when it is not an executable file.
    public static func program(forCommand program: String, configDirectory: URL, environment: [String: String]) -> String? {
        if program.contains("/") {
            let path = program.hasPrefix("/") ? program : configDirectory.appendingPathComponent(program).standardizedFileURL.path
            return isProgram(path) ? path : nil
        }
        return onPath(program, environment: environment)
    }

    static func onPath(_ name: String, environment: [String: String]) -> String? {
        let path = environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for folder in path.split(separator: ":") where !folder.isEmpty {
            let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent(name).path
            if isProgram(candidate) { return candidate }
        }
        return nil
    }

    static func isProgram(_ path: String) -> Bool {
        var isFolder: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) && !isFolder.boolValue
            && FileManager.default.isExecutableFile(atPath: path)
    }
}
