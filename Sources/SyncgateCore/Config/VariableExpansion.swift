/// `${VAR}` references in config values, as in a shell or Docker Compose:
///
/// - `${VAR}`: the variable's value; unset is an error.
/// - `${VAR:-default}`: `default` when VAR is unset or empty; `${VAR-default}`: only when unset.
/// - `${VAR:?message}`: an error saying `message` when VAR is unset or empty; `${VAR?message}`: only when unset.
/// - `$$`: a literal `$`.
///
/// A default may hold references itself (`${A:-${B}}`); `}` ends it (the braces of nested references pair up).
public enum VariableExpansion {
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public init(message: String) { self.message = message }
        public var description: String { message }
    }

    /// Expands every reference in `text`.
    public static func expand(_ text: String, environment: [String: String]) throws(Failure) -> String {
        guard text.contains("$") else { return text }
        var scanner = Scanner(text: Array(text), environment: environment)
        return try scanner.expandAll(until: nil)
    }

    /// The names of the variables `text` refers to (defaults included), for what must notice a change in them.
    public static func names(in text: String) -> [String] {
        var scanner = Scanner(text: Array(text), environment: [:])
        scanner.collecting = true
        _ = try? scanner.expandAll(until: nil)
        return scanner.names
    }

    private struct Scanner {
        let text: [Character]
        let environment: [String: String]
        var index = 0
        var collecting = false
        var names: [String] = []

        init(text: [Character], environment: [String: String]) {
            self.text = text
            self.environment = environment
        }

        var original: String { String(text) }

        /// Expands up to `terminator` (consumed) or the end.
        mutating func expandAll(until terminator: Character?) throws(Failure) -> String {
            var result = ""
            while index < text.count {
                let ch = text[index]
                if let terminator, ch == terminator {
                    index += 1
                    return result
                }
                if ch == "$", index + 1 < text.count {
                    let next = text[index + 1]
                    if next == "$" {
                        result.append("$")
                        index += 2
                        continue
                    }
                    if next == "{" {
                        index += 2
                        result += try reference()
                        continue
                    }
                }
                result.append(ch)
                index += 1
            }
            if terminator != nil { throw Failure(message: "unterminated ${ in '\(original)'") }
            return result
        }

        /// After `${`: `NAME}`, `NAME:-default}`, `NAME-default}`, `NAME:?message}`, `NAME?message}`.
        mutating func reference() throws(Failure) -> String {
            let start = index
            while index < text.count, text[index].isASCII, text[index].isLetter || text[index].isNumber || text[index] == "_" { index += 1 }
            let name = String(text[start..<index])
            guard index < text.count else { throw Failure(message: "unterminated ${ in '\(original)'") }
            guard !name.isEmpty, !name.first!.isNumber else {
                throw Failure(message: "'${\(String(text[start..<(text[start...].firstIndex(of: "}") ?? text.count)]))}' is not a valid environment variable reference")
            }
            if collecting { names.append(name) }
            let value = environment[name]
            let ch = text[index]
            if ch == "}" {
                index += 1
                if collecting { return "" }
                guard let value else { throw Failure(message: "environment variable \(name) is not set") }
                return value
            }
            var emptyCounts = false
            if ch == ":" {
                emptyCounts = true
                index += 1
                guard index < text.count else { throw Failure(message: "unterminated ${ in '\(original)'") }
            }
            let operation = text[index]
            guard operation == "-" || operation == "?" else {
                let shown = String(text[start..<(text[start...].firstIndex(of: "}") ?? text.count)])
                throw Failure(message: "'${\(shown)}' is not a valid environment variable reference (use ${NAME}, ${NAME:-default} or ${NAME:?message})")
            }
            index += 1
            let missing = value == nil || (emptyCounts && value!.isEmpty)
            // The default (or message) is expanded only when it is used, as a shell does; its own errors still
            // surface when it is.
            if collecting || missing {
                let word = try expandAll(until: "}")
                if collecting { return "" }
                if operation == "-" { return word }
                let why = value == nil ? "is not set" : "is empty"
                throw Failure(message: word.isEmpty ? "environment variable \(name) \(why)" : "environment variable \(name) \(why): \(word)")
            }
            try skipWord()
            return value!
        }

        /// Skips a default that is not used (its nested braces pair up).
        mutating func skipWord() throws(Failure) {
            var depth = 0
            while index < text.count {
                let ch = text[index]
                index += 1
                if ch == "$", index < text.count, text[index] == "$" {
                    index += 1
                } else if ch == "$", index < text.count, text[index] == "{" {
                    index += 1
                    depth += 1
                } else if ch == "}" {
                    if depth == 0 { return }
                    depth -= 1
                }
            }
            throw Failure(message: "unterminated ${ in '\(original)'")
        }
    }
}
