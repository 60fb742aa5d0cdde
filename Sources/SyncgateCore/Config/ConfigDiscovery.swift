import Foundation

/// Which config file a command reads, as rclone and Vector find theirs: `--config PATH`, else `SYNCGATE_CONFIG`,
/// else the first of `./plugins.yaml`, `$XDG_CONFIG_HOME/syncgate/plugins.yaml` (`~/.config` when unset) and
/// `/etc/syncgate/plugins.yaml` that exists (docs/configuration.md).
public struct ConfigDiscovery: Sendable {
    /// Where the file came from.
    public enum Origin: Sendable, Equatable {
        case option, environment, workingDirectory, user, system

        /// How `validate` names it.
        public var text: String {
            switch self {
            case .option: "from --config"
            case .environment: "from SYNCGATE_CONFIG"
            case .workingDirectory: "found in the current folder"
            case .user: "found in $XDG_CONFIG_HOME/syncgate"
            case .system: "found in /etc/syncgate"
            }
        }
    }

    /// The file a command reads and why that one.
    public struct Found: Sendable, Equatable {
        /// The path as given, or as found (`plugins.yaml` in the current folder: messages say `plugins.yaml:3:7`).
        public var path: String
        public var origin: Origin
    }

    /// No option, no variable, and none of the places holds a file.
    public struct NotFound: Error, Sendable, CustomStringConvertible {
        public var searched: [String]
        public var description: String {
            "no config file: none of \(searched.joined(separator: ", ")) exists (pass --config PATH or set SYNCGATE_CONFIG)"
        }
    }

    /// The file's name in each folder looked in.
    public static let fileName = "plugins.yaml"
    /// The system-wide folder (a package's `/etc/syncgate/plugins.yaml`).
    public static let systemDirectory = "/etc/syncgate"

    public var environment: [String: String]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// The places looked in, in order, when neither `--config` nor `SYNCGATE_CONFIG` names the file.
    public var searched: [(path: String, origin: Origin)] {
        var places: [(String, Origin)] = [(Self.fileName, .workingDirectory)]
        if let user = userDirectory { places.append((user + "/syncgate/" + Self.fileName, .user)) }
        places.append((Self.systemDirectory + "/" + Self.fileName, .system))
        return places
    }

    /// `$XDG_CONFIG_HOME`, or `$HOME/.config`; an empty or relative `XDG_CONFIG_HOME` is ignored (as the XDG base
    /// directory specification says). Nil without a home.
    var userDirectory: String? {
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") { return xdg }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home.isEmpty ? nil : home + "/.config"
    }

    /// The file to read. `explicit` (`--config`) and `SYNCGATE_CONFIG` are taken as they are, whether or not the
    /// file exists (reading it then says what is wrong); the places are tried only without either.
    public func locate(explicit: String?) throws(NotFound) -> Found {
        if let explicit, !explicit.isEmpty { return Found(path: explicit, origin: .option) }
        if let named = environment["SYNCGATE_CONFIG"], !named.isEmpty { return Found(path: named, origin: .environment) }
        let places = searched
        for place in places {
            var st = stat()
            // Anything there counts (a folder named plugins.yaml is reported as one, not skipped).
            if stat(place.path, &st) == 0 { return Found(path: place.path, origin: place.origin) }
        }
        throw NotFound(searched: places.map { $0.origin == .workingDirectory ? "./" + $0.path : $0.path })
    }
}
