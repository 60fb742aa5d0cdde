/// A configuration error located in the file: `plugins.yaml:14:7: destinations[1].retry.file: must be >= 0`.
public struct ConfigError: Error, Sendable, CustomStringConvertible, Hashable {
    public var file: String
    public var line: Int?
    public var column: Int?
    /// Key path such as `destinations[1].retry.file` ("" for the whole file).
    public var keyPath: String
    public var message: String
    /// The config's other errors, when loading found several (each one located): ``all`` lists them with this one.
    public var others: [ConfigError] = []

    public init(file: String, line: Int?, column: Int?, keyPath: String, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.keyPath = keyPath
        self.message = message
    }

    public var description: String {
        var text = file
        if let line { text += ":\(line)" }
        if let column { text += ":\(column)" }
        text += ": "
        if !keyPath.isEmpty { text += "\(keyPath): " }
        return text + message
    }

    /// This error and the ``others``, in the order of the file.
    public var all: [ConfigError] {
        var first = self
        first.others = []
        return [first] + others
    }

    /// Several errors as one: the first in the file, carrying the rest in ``others``. Nil when there are none.
    public static func combined(_ errors: [ConfigError]) -> ConfigError? {
        var seen = Set<ConfigError>()
        let flat = errors.flatMap(\.all).filter { seen.insert($0).inserted }
        let sorted = flat.enumerated().sorted { a, b in
            let ka = (a.element.line ?? 0, a.element.column ?? 0, a.offset)
            let kb = (b.element.line ?? 0, b.element.column ?? 0, b.offset)
            return ka < kb
        }.map(\.element)
        guard var first = sorted.first else { return nil }
        first.others = Array(sorted.dropFirst())
        return first
    }
}

/// Thrown from a plugin's `init(from:)` (or any value's) to reject a value: the config decoder turns it into a
/// ``ConfigError`` located at the value's line and column. `key` names a child key of the value being decoded
/// when the problem is with one of its fields.
public struct ConfigValueError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public var key: String?
    public init(_ message: String, key: String? = nil) {
        self.message = message
        self.key = key
    }
    public init(_ message: String, key: some CodingKey) {
        self.init(message, key: key.stringValue)
    }
    public var description: String { message }
}
