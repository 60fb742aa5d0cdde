import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Renews the leases of the rows this instance holds (``Ledger/instanceID``), its own row among the fleet's
/// instances, and its leads (``DestinationLeadership``), every quarter of a lease, once it has taken a claim or joined
/// the fleet, for as long as the ledger is open. A process that dies stops renewing; its rows are free for another
/// instance, and it is out of the fleet, when their lease ends.
///
/// On PostgreSQL it renews on a connection of its own, with deadlines of a fraction of a renewal's interval
/// (``PostgresDeadlines/renewal(interval:)``): it never waits behind another ledger call (a stuck query, the
/// ledger's writer) and a renewal never outlasts the next. Each renewal that succeeds confirms the ``fence``; one
/// that fails is logged and the connection is replaced at the next.
final class LeaseKeeper: Sendable {
    private let database: any LedgerDatabase
    private let instanceID: String
    private let leaseSeconds: Double
    /// Measures this instance's hold on its claims and leads (see ``LeaseFence``).
    let fence: LeaseFence
    /// Also renewed at each tick: the leads of this instance.
    private let leadership: DestinationLeadership?
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "syncgate.lease-keeper")

    private struct State {
        var timer: (any DispatchSourceTimer)?
        var stopped = false
        var connection: PostgresConnection?
        var failing = false
    }

    init(database: any LedgerDatabase, instanceID: String, leaseSeconds: Double, leadership: DestinationLeadership? = nil) {
        self.database = database
        self.instanceID = instanceID
        self.leaseSeconds = leaseSeconds
        self.leadership = leadership
        self.fence = LeaseFence(leaseSeconds: leaseSeconds)
    }

    /// How often the leases are renewed: a quarter of a lease, so that a renewal may fail and the next still
    /// confirms the fence before it lapses (at two thirds of a lease).
    var interval: Double { leaseSeconds / 4 }

    /// Starts renewing (once; later calls do nothing).
    func start() {
        state.withLock { state in
            guard state.timer == nil, !state.stopped else { return }
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(50))
            timer.setEventHandler { [weak self] in self?.renew() }
            timer.resume()
            state.timer = timer
        }
    }

    /// Extends every lease this instance holds to a full lease from now, and confirms its leads. A failure (the
    /// database away or not answering) is logged: the fence then lapses, and the claims end with their lease, when
    /// another instance may take the files.
    func renew() {
        let start = ContinuousClock.now
        do {
            if let postgres = database as? PostgresLedgerDatabase {
                // A renewal PostgreSQL aborts for a deadlock with another instance's write (their row locks taken in
                // another order) is run again at once, twice at most: two renewals lost in a row lapse the fence.
                var attempt = 0
                while true {
                    attempt += 1
                    do {
                        try renew(on: postgres)
                        break
                    } catch let error as LedgerError where error.transactionConflict && attempt < 3 {
                        continue
                    }
                }
            } else {
                try database.write(durable: false) { db in
                    try db.execute("UPDATE files SET lease_until = \(db.dialect.now) + ? WHERE claimed_by = ?", [leaseSeconds, instanceID])
                    try db.execute("UPDATE instances SET alive_until = \(db.dialect.now) + ? WHERE id = ?", [leaseSeconds, instanceID])
                }
            }
            fence.confirm(since: start)
            let recovered = state.withLock { state in
                defer { state.failing = false }
                return state.failing
            }
            if recovered { Logger(label: "syncgate").notice("the leases of this instance are renewed again") }
        } catch {
            state.withLock { $0.failing = true }
            Logger(label: "syncgate").warning("cannot renew the leases of this instance's uploads: \(error)")
        }
        leadership?.confirm()
    }

    /// One renewal on the keeper's own connection (connected again when the last one failed or ended).
    private func renew(on postgres: PostgresLedgerDatabase) throws {
        let deadlines = PostgresDeadlines.renewal(interval: interval)
        let logger = PostgresLedgerDatabase.lockLogger
        var connection = state.withLock { $0.connection }
        if connection?.isClosed ?? true {
            let configuration = try PostgresLedgerDatabase.configuration(postgres.location, applicationName: "syncgate leases pid \(getpid())", deadlines: deadlines)
            let fresh = try PostgresLedgerDatabase.connect(postgres.location, configuration: configuration, id: 0, logger: logger)
            // Kept only while the keeper runs: a connection made while ``stop()`` ran would never be closed.
            let kept = state.withLock { state in
                guard !state.stopped else { return false }
                state.connection = fresh
                return true
            }
            guard kept else {
                PostgresLedgerDatabase.closeLater(fresh)
                return
            }
            connection = fresh
        }
        guard let connection else { return }
        let sql = """
            WITH renewed AS (UPDATE files SET lease_until = \(SQLDialect.postgres.now) + $1 WHERE claimed_by = $2 RETURNING 1)
            UPDATE instances SET alive_until = \(SQLDialect.postgres.now) + $1 WHERE id = $2
            """
        var binds = PostgresBindings(capacity: 2)
        binds.append(leaseSeconds)
        binds.append(instanceID)
        do {
            _ = try deadlines.run(PostgresQuery(unsafeSQL: sql, binds: binds), on: connection, logger: logger)
        } catch {
            PostgresLedgerDatabase.closeLater(connection)
            state.withLock { $0.connection = nil }
            throw PostgresLedgerDatabase.explain(error, location: postgres.location)
        }
    }

    func stop() {
        let connection = state.withLock { state in
            state.stopped = true
            state.timer?.cancel()
            state.timer = nil
            defer { state.connection = nil }
            return state.connection
        }
        if let connection { PostgresLedgerDatabase.closeLater(connection) }
    }
}
