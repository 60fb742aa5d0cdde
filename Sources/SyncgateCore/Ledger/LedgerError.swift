/// Problems with the state file itself. Never silently replaced: the message says what to do.
public struct LedgerError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var message: String
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }
    public var description: String { "state file \(path): \(message)" }
}
