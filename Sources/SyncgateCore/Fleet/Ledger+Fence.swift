import Foundation

/// Fencing on a shared ledger (PostgreSQL): an instance acts on what it holds (its claims, its leads) only while it
/// can confirm that it still holds them.
/// - On its own clock: ``LeaseFence`` (claims) and ``DestinationLeadership`` (leads) say when the last renewal is
///   more than two thirds of a lease old; the delivery layer asks right before each upload starts
///   (``fenceRefusal(destination:needsOneWriter:token:)``), and a destination's run cuts off its uploads in flight.
/// - In the database: an outcome is written only to a row the instance still holds (``apply(_:)``), and a leader's
///   writes for its destination only while its epoch is the destination's (``checkEpochs(_:in:)``).
extension Ledger {
    /// What a destination's run captures when it starts: work taken under it stops for good at a lapse of the fence.
    func fenceToken() -> LeaseFence.Token { leases.fence.token() }

    /// Why this instance must not start an upload to `destination` now (nil: it may). Always nil on SQLite.
    func fenceRefusal(destination: String, needsOneWriter: Bool, token: LeaseFence.Token) -> String? {
        guard sharesWork else { return nil }
        let fence = leases.fence
        if !fence.holds(token) {
            let since = fence.sinceConfirmed().map { "for \($0.syncgateText)" } ?? "yet"
            return "this instance could not renew its leases \(since) (a lease is \(fence.lease.syncgateText); it stops \(fence.margin.syncgateText) before one ends), or did so only after that: another instance may hold its files now"
        }
        if needsOneWriter, let leadership, let why = leadership.refusal(destination) { return why }
        return nil
    }

    /// Refuses a write (throws a temporary ``LedgerError``) that touches rows of a destination this instance was
    /// granted the lead of, unless that lead's epoch is still the destination's. The destination's leader row is
    /// locked (`FOR SHARE`) to the end of the transaction, so no new lead is granted in between.
    func checkEpochs(_ destinations: Set<String>, in db: any LedgerConnection) throws {
        guard let leadership, db.dialect.isPostgres else { return }
        for destination in destinations.sorted() {
            guard let epoch = leadership.epoch(destination) else { continue }
            let current = try db.fetchOne("SELECT epoch FROM destination_leaders WHERE destination = ? FOR SHARE", [destination])?.int64(0)
            guard current == epoch else {
                throw LedgerError(path: path, message: "this instance no longer leads \(destination) (its lead had epoch \(epoch), the destination's is now \(current.map(String.init) ?? "none")): its writes there are refused", temporary: true)
            }
        }
    }
}
