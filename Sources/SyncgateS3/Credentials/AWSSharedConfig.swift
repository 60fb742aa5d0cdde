import Foundation

/// The AWS shared config and credentials files (`~/.aws/config`, `~/.aws/credentials`, or the files
/// `AWS_CONFIG_FILE` and `AWS_SHARED_CREDENTIALS_FILE` name), read as the AWS CLI and SDKs read them: INI sections
/// (`[default]` and `[profile NAME]` in the config file, `[NAME]` in the credentials file), `key = value` lines,
/// `#` and `;` comments, indented lines belonging to a nested setting (ignored). A profile's settings are those of
/// both files, the credentials file winning.
struct AWSSharedConfig: Sendable {
    /// Profile name to its settings (keys lowercased).
    var profiles: [String: [String: String]] = [:]
    /// The files that were read, for messages.
    var files: [String] = []

    static func load(environment: [String: String]) -> AWSSharedConfig {
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 }
        func path(_ variable: String, _ name: String) -> String? {
            if let set = environment[variable], !set.isEmpty { return expand(set, home: home) }
            return home.map { $0 + "/.aws/" + name }
        }
        var config = AWSSharedConfig()
        if let file = path("AWS_CONFIG_FILE", "config"), let text = try? String(contentsOfFile: file, encoding: .utf8) {
            config.files.append(file)
            config.merge(parse(text, configFile: true))
        }
        if let file = path("AWS_SHARED_CREDENTIALS_FILE", "credentials"), let text = try? String(contentsOfFile: file, encoding: .utf8) {
            config.files.append(file)
            config.merge(parse(text, configFile: false))
        }
        return config
    }

    private mutating func merge(_ other: [String: [String: String]]) {
        for (name, settings) in other { profiles[name, default: [:]].merge(settings) { _, new in new } }
    }

    static func expand(_ path: String, home: String?) -> String {
        guard path.hasPrefix("~/"), let home else { return path }
        return home + path.dropFirst()
    }

    /// Sections and their settings. In the config file a profile other than `default` is `[profile NAME]` (other
    /// section kinds, such as `[sso-session NAME]`, are left out); in the credentials file it is `[NAME]`.
    static func parse(_ text: String, configFile: Bool) -> [String: [String: String]] {
        var result: [String: [String: String]] = [:]
        var current: String?
        for raw in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            if raw.first == " " || raw.first == "\t" { continue }  // a nested setting's line
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { current = nil; continue }
                let name = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                if !configFile || name == "default" {
                    current = name
                } else if name.hasPrefix("profile ") || name.hasPrefix("profile\t") {
                    current = name.dropFirst("profile".count).trimmingCharacters(in: .whitespaces)
                } else {
                    current = nil
                }
                if let current { result[current, default: [:]] = result[current] ?? [:] }
                continue
            }
            guard let current, let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            // An inline comment needs whitespace before it (values may hold # and ;).
            for marker in [" #", " ;", "\t#", "\t;"] {
                if let range = value.range(of: marker) { value = value[..<range.lowerBound].trimmingCharacters(in: .whitespaces) }
            }
            guard !key.isEmpty else { continue }
            result[current, default: [:]][key] = value
        }
        return result
    }
}
