/// Lets options every command takes come before the command's name, as rclone, aws and docker allow
/// (`syncgate --config x.yaml sync`): ``hoist(_:)`` moves them after the command's name (the deepest one, for
/// `plugin check`), where the argument parser reads them. Nothing else is touched: the scan stops at the first word
/// that is neither a global option nor a command name, and at `--`; when it finds no command, the arguments stay as
/// they are (so that `--help`, `--version` and a usage error read as before).
public struct GlobalOptionOrder: Sendable {
    /// Long options that take a value (`--config PATH` or `--config=PATH`).
    public var valued: Set<String>
    /// Long flags (`--verbose`).
    public var flags: Set<String>
    /// Short flags, which may be combined (`-v`, `-vv`, `-vq`).
    public var shortFlags: Set<Character>
    /// Command names, each with its subcommands.
    public var commands: Command

    public struct Command: Sendable {
        public var subcommands: [String: Command]
        public init(_ subcommands: [String: Command] = [:]) { self.subcommands = subcommands }
    }

    public init(valued: Set<String>, flags: Set<String>, shortFlags: Set<Character>, commands: Command) {
        self.valued = valued
        self.flags = flags
        self.shortFlags = shortFlags
        self.commands = commands
    }

    /// `arguments` without the program's name.
    public func hoist(_ arguments: [String]) -> [String] {
        var moved: [String] = []
        var commandWords: [String] = []
        var index = 0
        var command = commands
        var insertAt: Int? = nil
        while index < arguments.count {
            let word = arguments[index]
            if let sub = command.subcommands[word] {
                // A command name: later ones may name its subcommands (`plugin check`).
                command = sub
                commandWords.append(word)
                index += 1
                insertAt = index
                continue
            }
            if insertAt != nil { break }  // past the command names
            if valued.contains(word) {
                guard index + 1 < arguments.count else { break }  // `--config` with no value: the parser says so
                moved += [word, arguments[index + 1]]
                index += 2
                continue
            }
            if let equals = word.firstIndex(of: "="), valued.contains(String(word[..<equals])) {
                moved.append(word)
                index += 1
                continue
            }
            if flags.contains(word) || isShortFlags(word) {
                moved.append(word)
                index += 1
                continue
            }
            break  // `--`, `--help`, `--version`, an unknown option or word: not ours to move past
        }
        // Global options come only before the first command name, so the words up to `insertAt` are those
        // options and the command names.
        guard let insertAt, !moved.isEmpty else { return arguments }
        return commandWords + moved + arguments[insertAt...]
    }

    /// A word where a command's name was due that names none (`syncgate statsu`, `syncgate plugin chek`), with
    /// the names possible there (sorted); nil when the words name commands, or stop before one (an option that is
    /// not a global one, `--`, nothing), or after a command without subcommands (its own arguments follow).
    /// `help` is the argument parser's own command.
    public func unknownCommand(in arguments: [String]) -> (word: String, known: [String])? {
        var index = 0
        var command = commands
        while index < arguments.count, !command.subcommands.isEmpty {
            let word = arguments[index]
            if let sub = command.subcommands[word] {
                command = sub
                index += 1
            } else if valued.contains(word) {
                index += 2
            } else if word.hasPrefix("-") {
                let name = word.firstIndex(of: "=").map { String(word[..<$0]) } ?? word
                guard valued.contains(name) || flags.contains(word) || isShortFlags(word) else { return nil }
                index += 1
            } else {
                if command.subcommands.count == commands.subcommands.count, word == "help" { return nil }
                return (word, command.subcommands.keys.sorted())
            }
        }
        return nil
    }

    private func isShortFlags(_ word: String) -> Bool {
        word.count >= 2 && word.first == "-" && word.dropFirst().allSatisfy { shortFlags.contains($0) }
    }
}
