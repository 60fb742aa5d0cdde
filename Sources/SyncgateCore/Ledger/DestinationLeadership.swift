import Foundation
import Logging
import PostgresNIO

/// Which destinations that need one writer (``Destination/needsOneWriter``) this instance leads, on a shared
/// PostgreSQL ledger: one session advisory lock per destination (its name hashed), taken with
/// `pg_try_advisory_lock` on a connection of its own and held for as long as the process lives. When the leader
/// dies its connection ends, the server releases the lock, and the next instance to ask becomes the leader (a
/// gateway asks at each pass). A lost connection (the server restarted) loses every lead: the next ask connects
/// again.
final class DestinationLeadership: @unchecked Sendable {
    let location: PostgresStateLocation
    private let lock = NSLock()
    private var connection: PostgresConnection?
    private var held: Set<String> = []

    /// The class of the advisory locks (the state's own are `(key, 0)` and `(key, 1)`, see ``PostgresStateLock``).
    static let lockClass: Int32 = 0x5347_4C48

    init(location: PostgresStateLocation) {
        self.location = location
    }

    private static var logger: Logger { PostgresLedgerDatabase.lockLogger }

    /// The lock's second key: FNV-1a of the destination's name.
    static func lockKey(_ destination: String) -> Int32 {
        var hash: UInt32 = 2_166_136_261
        for byte in destination.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        return Int32(bitPattern: hash)
    }

    /// Whether this instance leads `destination` now (taking the lead when nobody holds it). A database that
    /// cannot be reached leads nothing.
    func lead(_ destination: String) -> Bool {
        lock.withLock {
            if let connection, connection.isClosed {
                self.connection = nil
                held.removeAll()
            }
            if held.contains(destination) { return true }
            do {
                let connection = try self.connection ?? {
                    let configuration = try PostgresLedgerDatabase.configuration(location, applicationName: "syncgate leader pid \(getpid())")
                    return try PostgresLedgerDatabase.connect(location, configuration: configuration, id: 0, logger: DestinationLeadership.logger)
                }()
                self.connection = connection
                let sql = "SELECT pg_try_advisory_lock(\(DestinationLeadership.lockClass), \(DestinationLeadership.lockKey(destination)))"
                let rows = try connection.query(PostgresQuery(unsafeSQL: sql), logger: DestinationLeadership.logger).wait().rows
                guard try rows.first?.decode(Bool.self) == true else { return false }
                held.insert(destination)
                return true
            } catch {
                return false
            }
        }
    }

    /// Gives up every lead (the connection ends).
    func close() {
        lock.withLock {
            held.removeAll()
            if let connection { PostgresLedgerDatabase.unlockAndClose(connection, unlock: "SELECT pg_advisory_unlock_all()") }
            connection = nil
        }
    }

    deinit { close() }
}
