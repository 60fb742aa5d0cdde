import Foundation

/// The instances of a shared ledger (PostgreSQL): each registers in the `instances` table and renews its row with
/// its leases (``LeaseKeeper``). A full walk is split by the ``FleetView`` at its start; after it, the instance
/// notes per destination which view it walked its share of (`instance_walks`). An instance that sees the fleet
/// change in a way that leaves a share unwalked walks again (``fleetChanged(since:destinations:)``).
extension Ledger {
    /// Registers (or renews) this instance and returns the live instances as it sees them: nil on SQLite, where one
    /// instance works at a time and walks everything.
    public func fleetView() async throws -> FleetView? {
        guard sharesWork else { return nil }
        let members: [String] = try await write(notify: false) { [self] db in
            let now = db.dialect.now
            try db.execute("""
                INSERT INTO instances (id, alive_until, left_at) VALUES (?, \(now) + ?, NULL)
                ON CONFLICT (id) DO UPDATE SET alive_until = excluded.alive_until, left_at = NULL
                """, [instanceID, leaseSeconds])
            // Instances gone for a day are of no use to anyone.
            try db.execute("DELETE FROM instance_walks WHERE instance IN (SELECT id FROM instances WHERE alive_until < \(now) - 86400)", [])
            try db.execute("DELETE FROM instances WHERE alive_until < \(now) - 86400", [])
            return try Ledger.liveInstances(db)
        }
        leases.start()
        return FleetView(members: members, me: instanceID)
    }

    /// The live instances as the ledger holds them now, read and nothing written: the looks at the fleet while a
    /// walk runs, every 25 ms at first. The walk's start registered this instance (``fleetView()``) and its
    /// ``LeaseKeeper`` keeps its row alive, so a look need not renew it (a write, and on PostgreSQL a commit
    /// flushed to disk, for every look of every instance). The view holds this instance whatever the row says.
    /// Nil on SQLite.
    public func liveFleetView() async throws -> FleetView? {
        guard sharesWork else { return nil }
        let members = try await read { db in try Ledger.liveInstances(db) }
        return FleetView(members: members, me: instanceID)
    }

    /// The instances that have not left and whose lease runs (the server's clock), as `db` reads them now.
    private static func liveInstances(_ db: any LedgerConnection) throws -> [String] {
        try db.fetchAll("SELECT id FROM instances WHERE left_at IS NULL AND alive_until >= \(db.dialect.now)", []).compactMap { $0.string(0) }
    }

    /// The lead of `destination` as the ledger records it (``DestinationLeadership``): its holder and until when it
    /// runs (the server's clock, seconds since 1970; each renewal of the holder moves it on). Nil when none is
    /// recorded or the ledger is not shared.
    public func recordedLead(_ destination: String) async throws -> (holder: String, until: Double)? {
        guard sharesWork else { return nil }
        return try await read { db in
            guard let row = try db.fetchOne("SELECT holder, lead_until FROM destination_leaders WHERE destination = ?", [destination]),
                  let holder = row.string(0), let until = row.double(1) else { return nil }
            return (holder, until)
        }
    }

    /// The instances alive now, and per instance and destination the signature of the view it walked last.
    private func fleetState() async throws -> (live: Set<String>, walks: [String: [String: String]]) {
        try await read { [self] db in
            let live = Set(try Ledger.liveInstances(db) + [instanceID])
            var walks: [String: [String: String]] = [:]
            try db.forEachRow("SELECT instance, destination, view FROM instance_walks", []) { row in
                guard let instance = row.string(0), let destination = row.string(1) else { return }
                walks[instance, default: [:]][destination] = row.string(2)
            }
            return (live, walks)
        }
    }

    /// Whether the fleet changed since `view` in a way that may leave part of a walk for `destinations` split by
    /// `view` undone: an instance joined (the shares moved), or one of `view`'s instances is gone (left, or its
    /// lease ended) without having walked its share of `view` for each of them.
    public func fleetChanged(since view: FleetView, destinations: Set<String>) async throws -> Bool {
        guard sharesWork, !destinations.isEmpty else { return false }
        let (live, walks) = try await fleetState()
        let members = Set(view.members)
        if !live.subtracting(members).isEmpty { return true }
        return members.subtracting(live).contains { gone in destinations.contains { walks[gone]?[$0] != view.signature } }
    }

    /// Whether every other instance of `view` walked its share of it for each of `destinations`.
    public func fleetWalked(_ view: FleetView, destinations: Set<String>) async throws -> Bool {
        guard sharesWork, !view.isAlone, !destinations.isEmpty else { return true }
        let walks = try await fleetState().walks
        return view.members.allSatisfy { member in
            member == instanceID || destinations.allSatisfy { walks[member]?[$0] == view.signature }
        }
    }

    /// Notes that this instance walked its share of `view` in full for `destinations` (their files are recorded,
    /// and claimed where this instance sends them).
    public func noteWalked(_ view: FleetView, destinations: Set<String>) async throws {
        guard sharesWork, !destinations.isEmpty else { return }
        try await write(notify: false) { [self] db in
            for destination in destinations.sorted() {
                try db.execute("""
                    INSERT INTO instance_walks (instance, destination, view) VALUES (?, ?, ?)
                    ON CONFLICT (instance, destination) DO UPDATE SET view = excluded.view
                    """, [instanceID, destination, view.signature])
            }
        }
        for destination in destinations { walkedViews.set(view, for: destination) }
    }

    /// Per destination, the last view this instance walked its share of (a gateway looks for changes to them between
    /// its passes).
    public var lastWalkedViews: [String: FleetView] { walkedViews.value }

    /// Leaves the fleet (the process ends): the others see it gone at once rather than when its lease ends, and its
    /// leads are given up (their `lead_until` cleared), so that the next leader need not wait them out.
    public func leaveFleet() {
        guard sharesWork else { return }
        _ = try? database.write(durable: false) { db in
            try db.execute("UPDATE instances SET left_at = \(db.dialect.now) WHERE id = ?", [instanceID])
        }
        leadership?.close()
    }
}
