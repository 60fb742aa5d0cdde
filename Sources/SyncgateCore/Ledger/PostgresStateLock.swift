import Foundation
import Logging
import PostgresNIO
import Synchronization

/// ``StateLock`` for a PostgreSQL state: a shared session advisory lock of the database, held on a connection of
/// its own for as long as the sync or gateway runs, and released by the server when that connection ends (the
/// process exits or is killed). It is shared: several instances work on one PostgreSQL ledger at once, each file
/// delivered by the one that claims it (``Ledger/recordPending(_:at:)``); the lock tells `status` who runs. The
/// holder is told apart by its connection's `application_name` (`syncgate pid N`, `syncgate gateway pid N`), read
/// from `pg_stat_activity`.
final class PostgresStateLock: Sendable {
    let location: PostgresStateLocation
    /// The connection holding the lock, and whether it was let go on purpose (its end is then no news).
    private let held = Held()

    /// Kept apart from the lock so that the connection's end handler, which runs on its event loop, holds this and
    /// never the lock: were the handler's reference the lock's last, the lock's `deinit` would run on the event
    /// loop's thread.
    private final class Held: Sendable {
        let state = Mutex<(connection: PostgresConnection?, released: Bool)>((nil, false))
    }

    /// The advisory lock's key pair (the schema's own lock is `(key, 0)`, see ``Ledger/schemaLockKey``).
    static let key: (Int32, Int32) = (Ledger.schemaLockKey.0, 1)
    static let applicationPrefix = "syncgate "

    init(location: PostgresStateLocation) {
        self.location = location
    }

    private static var logger: Logger { PostgresLedgerDatabase.lockLogger }

    func acquire(gateway: Bool) throws {
        held.state.withLock { $0.released = false }
        let holder = (gateway ? "gateway " : "") + "pid \(getpid())"
        let configuration = try PostgresLedgerDatabase.configuration(location, applicationName: PostgresStateLock.applicationPrefix + holder)
        let connection = try PostgresLedgerDatabase.connect(location, configuration: configuration, id: 0, logger: PostgresStateLock.logger)
        let locked: Bool
        do {
            let rows = try PostgresDeadlines.ledger.run(
                PostgresQuery(unsafeSQL: "SELECT pg_try_advisory_lock_shared(\(PostgresStateLock.key.0), \(PostgresStateLock.key.1))"),
                on: connection, logger: PostgresStateLock.logger
            ).rows
            locked = try rows.first?.decode(Bool.self) ?? false
        } catch {
            PostgresLedgerDatabase.closeAndWait(connection)
            throw PostgresLedgerDatabase.explain(error, location: location)
        }
        guard locked else {
            let other = (try? PostgresStateLock.holder(on: connection)) ?? nil
            PostgresLedgerDatabase.closeAndWait(connection)
            throw StateLock.Busy(path: location.displayName, holder: other ?? "unknown pid")
        }
        held.state.withLock { $0.connection = connection }
        // The server ends the lock with the connection (a restart, a network cut): say so, since another instance
        // may then start on the same state.
        let name = location.displayName
        connection.closeFuture.whenComplete { [held] _ in
            guard held.state.withLock({ !$0.released }) else { return }
            Logger(label: "syncgate").error("the connection holding the state lock of \(name) ended: another syncgate may now start on it; restart this one")
        }
    }

    func release() {
        let connection: PostgresConnection? = held.state.withLock { state in
            guard let connection = state.connection else { return nil }
            state.connection = nil
            state.released = true
            return connection
        }
        guard let connection else { return }
        PostgresLedgerDatabase.unlockAndClose(connection, unlock: "SELECT pg_advisory_unlock_shared(\(PostgresStateLock.key.0), \(PostgresStateLock.key.1))")
    }

    deinit { release() }

    /// What the holder of the lock says of itself (`pid N`, `gateway pid N`), or nil when nobody holds it or the
    /// database cannot be reached.
    static func holder(of location: PostgresStateLocation) -> String? {
        guard let configuration = try? PostgresLedgerDatabase.configuration(location, applicationName: "syncgate status"),
            let connection = try? PostgresLedgerDatabase.connect(location, configuration: configuration, id: 0, logger: logger)
        else { return nil }
        defer { PostgresLedgerDatabase.closeAndWait(connection) }
        return (try? holder(on: connection)) ?? nil
    }

    private static func holder(on connection: PostgresConnection) throws -> String? {
        let rows = try PostgresDeadlines.ledger.run(PostgresQuery(unsafeSQL: holderQuery), on: connection, logger: logger).rows
        guard let row = rows.first else { return nil }
        return holder(applicationName: try row.decode(String.self))
    }

    /// The `application_name` of a session holding the lock, a gateway's first (no row when nobody holds it).
    static let holderQuery = """
        SELECT COALESCE(a.application_name, '') FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.classid = \(key.0) AND l.objid = \(key.1) AND l.objsubid = 2
            AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        ORDER BY (COALESCE(a.application_name, '') LIKE 'syncgate gateway %') DESC, l.pid
        """

    static func holder(applicationName name: String) -> String {
        name.hasPrefix(applicationPrefix) ? String(name.dropFirst(applicationPrefix.count)) : "pid unknown (\(name))"
    }
}

extension Ledger {
    /// Who holds the state lock of this PostgreSQL ledger (`pid N`, `gateway pid N`), asked on one of the ledger's
    /// own connections (the status page asks at every change); nil when nobody does, or for an SQLite ledger.
    func postgresLockHolder() async throws -> String? {
        guard case .postgres = state else { return nil }
        return try await read { db in
            try db.fetchOne(PostgresStateLock.holderQuery, [])?.string(0).map(PostgresStateLock.holder(applicationName:))
        }
    }
}
