/// A configuration error located in the file: `plugins.yaml:14:7: destinations[1].retry.file: must be >= 0`.
public struct ConfigError: Error, Sendable, CustomStringConvertible, Hashable {
    public var file: String
    public var line: Int?
    public var column: Int?
    /// Key path such as `destinations[1].retry.file` ("" for the whole file).
    public var keyPath: String
    public var message: String

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
