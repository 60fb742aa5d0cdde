import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Which destinations that need one writer (``Destination/needsOneWriter``) this instance leads, on a shared
/// PostgreSQL ledger: one session advisory lock per destination (its name hashed), taken with
/// `pg_try_advisory_lock` on a connection of its own and held for as long as the process lives. When the leader
/// dies its connection ends, the server releases the lock, and the next instance to ask becomes the leader (a
/// gateway asks every quarter of a lease). A lost connection (the server restarted, a deadline passed) loses every
/// lead: the next ask connects again.
///
/// Each grant of a lead takes a new *epoch* from the sequence `leader_epochs` and writes it to the destination's row
/// of `destination_leaders` (schema 7), with the holder and `lead_until`, the server's time plus a lease, renewed
/// with the instance's leases. The leader's ledger writes for the destination are made only while the row still has
/// its epoch (``Ledger/checkEpochs(_:in:)``): a leader that lost its lead without knowing it (cut off, frozen) has
/// its writes refused once another took over. The lead is confirmed on the monotonic clock like the leases
/// (``LeaseFence``): past two thirds of a lease without a confirmation the instance acts as if it had lost it. A new
/// leader whose predecessor's `lead_until` has not passed waits it out before it sends (``readyIn(_:)``): a
/// predecessor that is merely cut off stops before then.
final class DestinationLeadership: Sendable {
    let location: PostgresStateLocation
    let instanceID: String
    let leaseSeconds: Double
    private let state = Mutex(State())

    private struct State {
        var connection: PostgresConnection?
        /// The leads held, by destination.
        var held: [String: Lead] = [:]
        /// The epoch of the last lead granted per destination (kept after the lead is lost: writes under it are then
        /// refused).
        var epochs: [String: Int64] = [:]
        /// The start of the last confirmation of the connection holding the leads.
        var confirmed: ContinuousClock.Instant?
    }

    private struct Lead {
        var epoch: Int64
        /// When the previous leader's lead has ended for sure.
        var readyAt: ContinuousClock.Instant
    }

    /// The class of the advisory locks (the state's own are `(key, 0)` and `(key, 1)`, see ``PostgresStateLock``).
    static let lockClass: Int32 = 0x5347_4C48

    init(location: PostgresStateLocation, instanceID: String, leaseSeconds: Double) {
        self.location = location
        self.instanceID = instanceID
        self.leaseSeconds = leaseSeconds
    }

    private static var logger: Logger { PostgresLedgerDatabase.lockLogger }

    private var deadlines: PostgresDeadlines { PostgresDeadlines.renewal(interval: leaseSeconds / 4) }

    /// How long a lead holds after its last confirmation started.
    private var window: Duration { .milliseconds(Int64(leaseSeconds * 1000 * 2 / 3)) }

    /// The lock's second key: FNV-1a of the destination's name.
    static func lockKey(_ destination: String) -> Int32 {
        var hash: UInt32 = 2_166_136_261
        for byte in destination.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return Int32(bitPattern: hash)
    }

    private func run(_ sql: String, _ binds: PostgresBindings = PostgresBindings(), on connection: PostgresConnection) throws -> PostgresQueryResult {
        try deadlines.run(PostgresQuery(unsafeSQL: sql, binds: binds), on: connection, logger: DestinationLeadership.logger)
    }

    /// Whether this instance leads `destination` now (taking the lead, with a new epoch, when nobody holds it). A
    /// database that cannot be reached leads nothing.
    func lead(_ destination: String) -> Bool {
        state.withLock { state in
            if let connection = state.connection, connection.isClosed { drop(&state) }
            if state.held[destination] != nil { return true }
            let start = ContinuousClock.now
            do {
                let connection = try state.connection ?? {
                    let configuration = try PostgresLedgerDatabase.configuration(location, applicationName: "syncgate leader pid \(getpid())", deadlines: deadlines)
                    return try PostgresLedgerDatabase.connect(location, configuration: configuration, id: 0, logger: DestinationLeadership.logger)
                }()
                state.connection = connection
                if state.held.isEmpty { state.confirmed = start }
                let key = "\(DestinationLeadership.lockClass), \(DestinationLeadership.lockKey(destination))"
                guard try run("SELECT pg_try_advisory_lock(\(key))", on: connection).rows.first?.decode(Bool.self) == true else { return false }
                do {
                    let (epoch, wait) = try grant(destination, on: connection)
                    state.held[destination] = Lead(epoch: epoch, readyAt: ContinuousClock.now + .milliseconds(Int64(wait * 1000)))
                    state.epochs[destination] = epoch
                    return true
                } catch {
                    _ = try? run("SELECT pg_advisory_unlock(\(key))", on: connection)
                    throw error
                }
            } catch {
                Logger(label: "syncgate").warning("cannot take the lead of \(destination): \(PostgresLedgerDatabase.explain(error, location: location))")
                if let connection = state.connection, connection.isClosed { drop(&state) }
                return false
            }
        }
    }

    /// Writes a new epoch for `destination`; returns it and how many seconds the previous leader's lead still runs
    /// (0 when it was this instance's, it ended, or it was given up).
    private func grant(_ destination: String, on connection: PostgresConnection) throws -> (Int64, Double) {
        let now = SQLDialect.postgres.now
        var binds = PostgresBindings(capacity: 1)
        binds.append(destination)
        var wait = 0.0
        if let row = try run("SELECT holder, COALESCE(lead_until - \(now), 0) FROM destination_leaders WHERE destination = $1", binds, on: connection).rows.first {
            let (holder, left) = try row.decode((String?, Double).self)
            if holder != instanceID { wait = max(0, left) }
        }
        binds.append(instanceID)
        binds.append(leaseSeconds)
        let rows = try run("""
            INSERT INTO destination_leaders (destination, epoch, holder, lead_until) VALUES ($1, nextval('leader_epochs'), $2, \(now) + $3)
            ON CONFLICT (destination) DO UPDATE SET epoch = excluded.epoch, holder = excluded.holder, lead_until = excluded.lead_until
            RETURNING epoch
            """, binds, on: connection).rows
        guard let epoch = try rows.first?.decode(Int64.self) else {
            throw LedgerError(path: location.displayName, message: "no epoch was granted for \(destination)", temporary: true)
        }
        return (epoch, wait)
    }

    /// Forgets the connection and every lead it held (their epochs are kept).
    private func drop(_ state: inout State) {
        if let connection = state.connection { PostgresLedgerDatabase.closeLater(connection) }
        if !state.held.isEmpty {
            Logger(label: "syncgate").warning("lost the lead of \(state.held.keys.sorted().joined(separator: ", ")): its connection to PostgreSQL ended")
        }
        state.connection = nil
        state.held.removeAll()
        state.confirmed = nil
    }

    /// Renews the leads this instance holds (their `lead_until`) on their connection, which confirms them; a failure
    /// loses them all (the connection is closed).
    func confirm() {
        state.withLock { state in
            guard let connection = state.connection, !state.held.isEmpty else { return }
            let start = ContinuousClock.now
            var binds = PostgresBindings(capacity: 2)
            binds.append(leaseSeconds)
            binds.append(instanceID)
            do {
                _ = try run("UPDATE destination_leaders SET lead_until = \(SQLDialect.postgres.now) + $1 WHERE holder = $2", binds, on: connection)
                state.confirmed = start
            } catch {
                Logger(label: "syncgate").warning("cannot confirm the lead of \(state.held.keys.sorted().joined(separator: ", ")): \(PostgresLedgerDatabase.explain(error, location: location))")
                drop(&state)
            }
        }
    }

    /// Why this instance may not send to `destination` now (nil: it may): it does not lead it, or its lead was not
    /// confirmed for two thirds of a lease.
    func refusal(_ destination: String) -> String? {
        state.withLock { state in
            guard state.held[destination] != nil, !(state.connection?.isClosed ?? true) else { return "this instance no longer leads \(destination)" }
            guard let confirmed = state.confirmed, ContinuousClock.now - confirmed < window else {
                return "the lead of \(destination) could not be confirmed for two thirds of a lease"
            }
            return nil
        }
    }

    /// How long, from now, the previous leader of `destination` may still act (zero when not led here).
    func readyIn(_ destination: String) -> Duration {
        state.withLock { state in
            guard let lead = state.held[destination] else { return .zero }
            return max(.zero, lead.readyAt - ContinuousClock.now)
        }
    }

    /// Whether this instance holds the lead of `destination`.
    func holds(_ destination: String) -> Bool {
        state.withLock { $0.held[destination] != nil }
    }

    /// The epoch of the last lead of `destination` this instance was granted (nil: never).
    func epoch(_ destination: String) -> Int64? {
        state.withLock { $0.epochs[destination] }
    }

    /// Gives up every lead (its `lead_until` cleared, so that the next leader need not wait; the connection ends).
    func close() {
        state.withLock { state in
            if let connection = state.connection {
                if !state.held.isEmpty, !connection.isClosed {
                    var binds = PostgresBindings(capacity: 1)
                    binds.append(instanceID)
                    _ = try? run("UPDATE destination_leaders SET lead_until = NULL WHERE holder = $1", binds, on: connection)
                }
                PostgresLedgerDatabase.unlockAndClose(connection, unlock: "SELECT pg_advisory_unlock_all()")
            }
            state.held.removeAll()
            state.connection = nil
        }
    }

    deinit { close() }
}
