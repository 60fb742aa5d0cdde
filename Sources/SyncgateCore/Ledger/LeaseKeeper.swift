import Foundation
import Logging

/// Renews the leases of the rows this instance holds (``Ledger/instanceID``) and its own row among the fleet's
/// instances, every third of a lease, once it has taken a claim or joined the fleet, for as long as the ledger is
/// open: one statement for each. A process that dies stops renewing; its rows are free for another instance, and it
/// is out of the fleet, when their lease ends.
final class LeaseKeeper: @unchecked Sendable {
    private let database: any LedgerDatabase
    private let instanceID: String
    private let leaseSeconds: Double
    private let lock = NSLock()
    private var timer: (any DispatchSourceTimer)?
    private var stopped = false
    private let queue = DispatchQueue(label: "syncgate.lease-keeper")

    init(database: any LedgerDatabase, instanceID: String, leaseSeconds: Double) {
        self.database = database
        self.instanceID = instanceID
        self.leaseSeconds = leaseSeconds
    }

    /// Starts renewing (once; later calls do nothing).
    func start() {
        lock.withLock {
            guard timer == nil, !stopped else { return }
            let timer = DispatchSource.makeTimerSource(queue: queue)
            let interval = leaseSeconds / 3
            timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(50))
            timer.setEventHandler { [weak self] in self?.renew() }
            timer.resume()
            self.timer = timer
        }
    }

    /// Extends every lease this instance holds to a full lease from now. A failure (the database away) is logged:
    /// the claims then end with their lease, and another instance may take the files.
    func renew() {
        do {
            try database.write(durable: false) { db in
                try db.execute("UPDATE files SET lease_until = \(db.dialect.now) + ? WHERE claimed_by = ?", [leaseSeconds, instanceID])
                try db.execute("UPDATE instances SET alive_until = \(db.dialect.now) + ? WHERE id = ?", [leaseSeconds, instanceID])
            }
        } catch {
            Logger(label: "syncgate").warning("cannot renew the leases of this instance's uploads: \(error)")
        }
    }

    func stop() {
        lock.withLock {
            stopped = true
            timer?.cancel()
            timer = nil
        }
    }
}
