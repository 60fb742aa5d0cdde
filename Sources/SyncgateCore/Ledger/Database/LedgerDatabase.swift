/// The engine under a ``Ledger``: SQLite (``SQLiteLedgerDatabase``, the default, a file beside the config) or
/// PostgreSQL (``PostgresLedgerDatabase``). Every call is synchronous and may block its calling thread; it is
/// never called from an event loop of SwiftNIO.
protocol LedgerDatabase: Sendable {
    var dialect: SQLDialect { get }
    /// Reads, from a consistent view where the engine gives one.
    func read<T>(_ body: (any LedgerConnection) throws -> T) throws -> T
    /// Writes in one transaction (all or nothing). `durable`: on disk before this returns, whatever the engine
    /// otherwise leaves to a later checkpoint.
    @discardableResult
    func write<T>(durable: Bool, _ body: (any LedgerConnection) throws -> T) throws -> T
    /// Throws when the state is no longer the one opened (an SQLite file deleted or replaced), once per loss.
    func checkIdentity() throws
    /// A number that changes when another process commits a change that a gateway should act on (retry, forget).
    func changeCounter() throws -> Int
    /// Counts a change that ``changeCounter()`` of other processes must see, inside the write making it.
    func noteChange(_ connection: any LedgerConnection) throws
    /// Ends the connections (the ledger is done with).
    func close()
}
