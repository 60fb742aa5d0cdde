/// Problems with the state file (or database) itself. Never silently replaced: the message says what to do.
public struct LedgerError: Error, Sendable, CustomStringConvertible {
    /// The state file's path, or a PostgreSQL state's URL without its password.
    public var path: String
    public var message: String
    /// The file was deleted or replaced under a running syncgate (exit 78, like a damaged state file).
    public var stateLost: Bool
    /// A PostgreSQL state that cannot be reached now (down, restarting, overloaded): a later run may succeed
    /// (exit 75), unlike a damaged or refused state (exit 78).
    public var temporary: Bool
    /// PostgreSQL aborted the transaction to let another go on (a deadlock between instances, SQLSTATE 40P01, or a
    /// serialization failure, 40001): running it again is expected to work.
    public var transactionConflict = false
    public init(path: String, message: String, stateLost: Bool = false, temporary: Bool = false) {
        self.path = path
        self.message = message
        self.stateLost = stateLost
        self.temporary = temporary
    }
    public var description: String {
        PostgresStateLocation.isURL(path) ? "state database \(path): \(message)" : "state file \(path): \(message)"
    }
}
