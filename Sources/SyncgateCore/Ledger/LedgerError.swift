/// Problems with the state file itself. Never silently replaced: the message says what to do.
public struct LedgerError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var message: String
    /// The file was deleted or replaced under a running syncgate (exit 78, like a damaged state file).
    public var stateLost: Bool
    public init(path: String, message: String, stateLost: Bool = false) {
        self.path = path
        self.message = message
        self.stateLost = stateLost
    }
    public var description: String { "state file \(path): \(message)" }
}
