import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import Synchronization

/// The ledger in a PostgreSQL database, through postgres-nio: a few connections kept open, one per read or write
/// in progress. The ledger's calls are synchronous: each statement blocks its calling thread until the answer is
/// there, which runs on an event loop of the ledger's own (never the caller's, which is never an event loop).
///
/// Commits are durable when they return (PostgreSQL's default `synchronous_commit`), so a durable write is an
/// ordinary one. Reads take no transaction: each statement sees what was committed when it started; a long read
/// of the files is done in pages on the primary key (``PostgresKeysetCursor``).
///
/// No call waits for ever (``PostgresDeadlines``): each statement has a deadline on the server and on the client, a
/// connection attempt has one, and a connection whose round trip went past its deadline is closed and replaced.
final class PostgresLedgerDatabase: LedgerDatabase, Sendable {
    let location: PostgresStateLocation
    private let configuration: PostgresConnection.Configuration
    let deadlines: PostgresDeadlines
    private let logger: Logger
    private let pool = Mutex(Pool())
    /// Held for each write transaction (see ``write(durable:_:)``).
    private let writer = Mutex(())

    private struct Pool {
        var idle: [PostgresConnection] = []
        var nextID = 1
        var closed = false
        /// How many times this process counted a change (``noteChange(_:)``): ``changeCounter()`` leaves them out.
        var ownChanges = 0
    }

    /// Idle connections kept for the next read or write.
    static let maximumIdle = 4

    /// The event loop of every ledger connection of this process: one thread, never blocked by a ledger call.
    static let eventLoopGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    var dialect: SQLDialect { .postgres }

    init(location: PostgresStateLocation, applicationName: String = "syncgate", deadlines: PostgresDeadlines = .ledger) throws {
        self.location = location
        self.deadlines = deadlines
        self.configuration = try PostgresLedgerDatabase.configuration(location, applicationName: applicationName, deadlines: deadlines)
        var logger = Logger(label: "syncgate-ledger-postgres")
        logger.logLevel = .error
        self.logger = logger
    }

    /// A connection's configuration: `deadlines` sets its connect timeout and, on the server, its statement timeout
    /// and TCP keepalive.
    static func configuration(_ location: PostgresStateLocation, applicationName: String, deadlines: PostgresDeadlines = .ledger) throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS
        switch location.tls {
        case .disable: tls = .disable
        case .prefer, .require:
            let context: NIOSSLContext
            do {
                context = try NIOSSLContext(configuration: .makeClientConfiguration())
            } catch {
                throw LedgerError(path: location.displayName, message: "cannot set up TLS: \(error)")
            }
            tls = location.tls == .prefer ? .prefer(context) : .require(context)
        }
        var configuration = PostgresConnection.Configuration(
            host: location.host, port: location.port, username: location.user, password: location.password?.reveal(),
            database: location.database, tls: tls)
        configuration.options.additionalStartupParameters = [("application_name", applicationName)] + deadlines.startupParameters
        configuration.options.connectTimeout = .milliseconds(deadlines.connect.milliseconds)
        return configuration
    }

    /// Opens one connection (blocking, up to the configuration's connect timeout: TCP, TLS and login), for the
    /// ledger's pool or a lock that holds one of its own.
    static func connect(_ location: PostgresStateLocation, configuration: PostgresConnection.Configuration, id: Int, logger: Logger) throws -> PostgresConnection {
        guard !PostgresDeadlines.onEventLoop else { throw explain(PostgresDeadlines.OnEventLoop(), location: location) }
        do {
            return try PostgresConnection.connect(on: eventLoopGroup.next(), configuration: configuration, id: id, logger: logger).wait()
        } catch {
            throw explain(error, location: location)
        }
    }

    // MARK: - Connections

    private func take() throws -> PostgresConnection {
        let displayName = location.displayName
        let (reused, id): (PostgresConnection?, Int) = try pool.withLock { pool in
            if pool.closed { throw LedgerError(path: displayName, message: "the ledger was closed") }
            while let connection = pool.idle.popLast() {
                if !connection.isClosed { return (connection, 0) }
            }
            pool.nextID += 1
            return (nil, pool.nextID)
        }
        if let reused { return reused }
        return try PostgresLedgerDatabase.connect(location, configuration: configuration, id: id, logger: logger)
    }

    private func give(_ connection: PostgresConnection) {
        let keep = pool.withLock { pool in
            guard !pool.closed, !connection.isClosed, pool.idle.count < PostgresLedgerDatabase.maximumIdle else { return false }
            pool.idle.append(connection)
            return true
        }
        if !keep { PostgresLedgerDatabase.closeLater(connection) }
    }

    private func withConnection<T>(_ body: (PostgresLedgerConnection) throws -> T) throws -> T {
        let connection = try take()
        defer { give(connection) }
        return try body(PostgresLedgerConnection(connection: connection, database: self, logger: logger))
    }

    func read<T>(_ body: (any LedgerConnection) throws -> T) throws -> T {
        try withConnection { connection in try body(connection) }
    }

    /// Writes of this process one at a time, as SQLite's single writer makes them: the ledger's read-then-write
    /// steps (a failure's run count, a destination's state) were written for that. Other instances write beside
    /// them (a fleet): a transaction PostgreSQL aborts for a deadlock with one of theirs, or a serialization
    /// failure, is run again from the start (up to 8 times, after a short random pause), as PostgreSQL's manual
    /// advises; every ledger write is a transaction that can be.
    func write<T>(durable: Bool, _ body: (any LedgerConnection) throws -> T) throws -> T {
        var result: T?
        try writer.withLock { _ in result = try writeOneAtATime(body) }
        return result!
    }

    private func writeOneAtATime<T>(_ body: (any LedgerConnection) throws -> T) throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try withConnection { connection in
                    try connection.executeOnce("BEGIN", [])
                    let result: T
                    do {
                        result = try body(connection)
                        try connection.executeOnce("COMMIT", [])
                    } catch {
                        _ = try? connection.executeOnce("ROLLBACK", [])
                        throw error
                    }
                    return result
                }
            } catch let error as LedgerError where error.transactionConflict && attempt < 8 {
                usleep(UInt32.random(in: 5_000...(20_000 * UInt32(attempt))))
            }
        }
    }

    func checkIdentity() throws {}

    /// The `changes` count of `syncgate_meta`, less the changes this process counted itself.
    func changeCounter() throws -> Int {
        let own = pool.withLock { $0.ownChanges }
        let value = try read { connection in
            try connection.fetchOne("SELECT value FROM syncgate_meta WHERE key = 'changes'", []).flatMap { $0.string(0) }.flatMap { Int($0) } ?? 0
        }
        return value - own
    }

    func noteChange(_ connection: any LedgerConnection) throws {
        try connection.execute("""
            INSERT INTO syncgate_meta (key, value) VALUES ('changes', '1')
            ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(syncgate_meta.value AS BIGINT) + 1 AS TEXT)
            """, [])
        pool.withLock { $0.ownChanges += 1 }
    }

    func close() {
        let connections = pool.withLock { pool in
            pool.closed = true
            defer { pool.idle = [] }
            return pool.idle
        }
        for connection in connections { PostgresLedgerDatabase.closeLater(connection) }
    }

    /// Closes a connection without waiting; it is kept until closed (postgres-nio insists on that).
    static func closeLater(_ connection: PostgresConnection) {
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// A quiet logger for the connections that hold advisory locks (``PostgresStateLock``,
    /// ``DestinationLeadership``): their failures are reported by what they return.
    static var lockLogger: Logger {
        var logger = Logger(label: "syncgate-ledger-postgres")
        logger.logLevel = .error
        return logger
    }

    /// Runs `unlock` (the advisory locks a connection holds), then closes the connection and waits for that. The
    /// server drops a closed session's locks a moment after it ends, and whoever looks right after this returns
    /// must not see them held. A connection the server already ended may never answer: it is closed after 2 s
    /// whatever happens.
    /// On an event loop's thread (a last reference dropped in a connection's callback) nothing is waited for: the
    /// unlock is refused there (``PostgresDeadlines/run(_:on:logger:)``), the connection is closed, and the server
    /// drops its session's locks.
    static func unlockAndClose(_ connection: PostgresConnection, unlock: String) {
        if !connection.isClosed {
            let quick = PostgresDeadlines(statement: .seconds(1), connect: .seconds(1), clientSlack: .seconds(1))
            _ = try? quick.run(PostgresQuery(unsafeSQL: unlock), on: connection, logger: lockLogger)
        }
        closeAndWait(connection)
    }

    /// Closes `connection` and waits until it is closed; on an event loop's thread it only closes it.
    static func closeAndWait(_ connection: PostgresConnection) {
        guard !PostgresDeadlines.onEventLoop else {
            closeLater(connection)
            return
        }
        _ = try? connection.close().wait()
    }

    deinit { close() }

    // MARK: - Errors

    func explain(_ error: any Error) -> LedgerError { PostgresLedgerDatabase.explain(error, location: location) }

    /// A ledger error in words, without a password: what PostgreSQL answered (its message and SQLSTATE), or why it
    /// could not be reached. Unreachable or overloaded servers are `temporary` (the run exits 75, to try again).
    static func explain(_ error: any Error, location: PostgresStateLocation) -> LedgerError {
        if let error = error as? LedgerError { return error }
        let name = location.displayName
        if let error = error as? PostgresDeadlines.Exceeded {
            return LedgerError(path: name, message: "PostgreSQL at \(location.host):\(location.port) is not answering (\(error)); try again", temporary: true)
        }
        guard let error = error as? PSQLError else {
            return LedgerError(path: name, message: "cannot reach PostgreSQL at \(location.host):\(location.port): \(Redactor.shared.redact(String(describing: error)))", temporary: true)
        }
        if let info = error.serverInfo, let state = info[.sqlState] {
            let message = Redactor.shared.redact(info[.message] ?? "error")
            switch state {
            case "28P01", "28000":
                return LedgerError(path: name, message: "PostgreSQL refused the login of user \(location.user) (\(message)); check the password (in the URL, PGPASSWORD or state.password_file) and pg_hba.conf")
            case "3D000":
                return LedgerError(path: name, message: "the database \(location.database) does not exist (\(message)); create it (createdb \(location.database)), then run syncgate migrate")
            case "42501":
                return LedgerError(path: name, message: "user \(location.user) may not do this (\(message)); grant it the rights on the database")
            case "53100":
                return LedgerError(path: name, message: "PostgreSQL's disk is full (\(message)); nothing was lost, free some space and run again", temporary: true)
            case "57014":
                return LedgerError(path: name, message: "PostgreSQL cancelled a statement that ran past its deadline (\(message)): the server is overloaded or a lock is held; try again", temporary: true)
            case "25P03":
                return LedgerError(path: name, message: "PostgreSQL ended a session idle in a transaction past its deadline (\(message)); try again", temporary: true)
            case "40P01", "40001":
                var conflict = LedgerError(path: name, message: "PostgreSQL aborted a transaction that conflicted with another instance's (\(message), SQLSTATE \(state)); try again", temporary: true)
                conflict.transactionConflict = true
                return conflict
            case let s where s.hasPrefix("08") || s.hasPrefix("57P") || s == "53300" || s.hasPrefix("40"):
                return LedgerError(path: name, message: "PostgreSQL is not available (\(message), SQLSTATE \(state)); try again", temporary: true)
            default:
                return LedgerError(path: name, message: "PostgreSQL answered: \(message) (SQLSTATE \(state))")
            }
        }
        switch error.code {
        case .authMechanismRequiresPassword:
            return LedgerError(path: name, message: "PostgreSQL asks user \(location.user) for a password and none is set (in the URL, PGPASSWORD or state.password_file)")
        case .sslUnsupported:
            return LedgerError(path: name, message: "the server does not offer TLS, which sslmode=require asks for")
        default:
            let why = error.underlying.map { Redactor.shared.redact(String(describing: $0)) } ?? "\(error.code)"
            return LedgerError(path: name, message: "cannot reach PostgreSQL at \(location.host):\(location.port) (\(why))", temporary: true)
        }
    }
}
