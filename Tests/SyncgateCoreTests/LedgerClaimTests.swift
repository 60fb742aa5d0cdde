import Foundation
import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport
import Testing

/// Claims with leases (schema 5): two ``Ledger`` objects on one PostgreSQL database are two instances of a fleet.
/// One claims a row, the other skips it; a lease that ends (its holder gone) is taken over; a live holder renews
/// its leases; an outcome releases the claim. On SQLite the same statements run, and claims never stand in the
/// way of the one instance.
@Suite("state ledger: claims and leases of several instances")
struct LedgerClaimTests {
    let dir: TemporaryDirectory
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    init() throws { dir = try TemporaryDirectory("sg-ledger-claims") }

    func key(_ n: Int) -> FileKey { FileKey(source: "outbox", path: "f\(n).bin") }

    func pending(_ n: Int, unlessSynced: Bool = true) -> Ledger.Pending {
        Ledger.Pending(file: key(n), destination: "bucket", size: 10, modificationTime: t0, sha256: "aa", contentChanged: false,
                       unlessSynced: unlessSynced)
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)))
    func oneInstanceClaimsTheOtherSkips() async throws {
        defer { dir.remove() }
        try await LedgerEngine.postgres.withStates(dir) { state, _ in
            let location = try await state("fleet")
            let a = try Ledger(state: location, leaseSeconds: 30)
            let b = try Ledger(state: location, leaseSeconds: 30)
            #expect(a.instanceID != b.instanceID)
            #expect(a.sharesWork && b.sharesWork)
            await #expect(try a.recordPending([pending(1), pending(2)], at: t0) == [true, true])
            await #expect(try b.recordPending([pending(1), pending(2), pending(3)], at: t0) == [false, false, true])
            await #expect(try a.entry(key(1), destination: "bucket")?.claimedBy == a.instanceID)
            await #expect(try a.entry(key(3), destination: "bucket")?.claimedBy == b.instanceID)
            // A claim does not stop its own holder recording the row again.
            await #expect(try a.recordPending([pending(1)], at: t0 + 1) == [true])

            // B starting a sync resets only what it may: A's upload in flight stays A's.
            try await a.markUploading(key(1), destination: "bucket", at: t0 + 1)
            try await b.markUploading(key(3), destination: "bucket", at: t0 + 1)
            await #expect(try b.resetInterrupted(at: t0 + 2) == 1)
            await #expect(try a.entry(key(1), destination: "bucket")?.status == .uploading)
            await #expect(try a.entry(key(1), destination: "bucket")?.claimedBy == a.instanceID)
            await #expect(try a.entry(key(3), destination: "bucket")?.status == .pending)
            await #expect(try b.othersClaims(destinations: ["bucket"]).live == 2)
            await #expect(try b.othersClaims(destinations: ["elsewhere"]).live == 0)

            // An outcome releases the claim; a row delivered since it was planned new is not taken again.
            try await a.markSynced(key(1), destination: "bucket", receipt: Receipt(remoteName: "f1.bin"), size: 10, modificationTime: t0, sha256: "aa", at: t0 + 3)
            let synced = try await #require(try a.entry(key(1), destination: "bucket"))
            #expect(synced.status == .synced && synced.claimedBy == nil && synced.leaseUntil == nil)
            await #expect(try b.recordPending([pending(1)], at: t0 + 4) == [false])
            await #expect(try b.entry(key(1), destination: "bucket")?.status == .synced)
            await #expect(try b.recordPending([pending(1, unlessSynced: false)], at: t0 + 4) == [true], "a changed file is sent again")

            // An outcome B writes on a row A holds is not written: the row is A's.
            try await b.markSynced(key(2), destination: "bucket", receipt: Receipt(remoteName: "f2.bin"), size: 10, modificationTime: t0, sha256: "aa", at: t0 + 5)
            await #expect(try a.entry(key(2), destination: "bucket")?.status == .pending)
            await #expect(try a.entry(key(2), destination: "bucket")?.claimedBy == a.instanceID)

            // The end of A's run frees what it did not send.
            try await a.releaseClaims(destination: "bucket")
            await #expect(try a.entry(key(2), destination: "bucket")?.claimedBy == nil)
            await #expect(try b.recordPending([pending(2)], at: t0 + 6) == [true])
        }
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)))
    func anExpiredLeaseIsTakenOverAndALiveOneIsRenewed() async throws {
        defer { dir.remove() }
        try await LedgerEngine.postgres.withStates(dir) { state, _ in
            let location = try await state("fleet")
            // Leases of 6 s (renewed every 1.5 s): with 1 s, the dying instance's lease ran out before the next
            // statement beside `stress-ng --cpu 4`.
            var dying: Ledger? = try Ledger(state: location, leaseSeconds: 6)
            let living = try Ledger(state: location, leaseSeconds: 6)
            let other = try Ledger(state: location, leaseSeconds: 30)
            await #expect(try dying?.recordPending([pending(1)], at: t0) == [true])
            try await dying?.markUploading(key(1), destination: "bucket", at: t0)
            await #expect(try living.recordPending([pending(2)], at: t0) == [true])
            let firstLease = try await #require(try other.entry(key(2), destination: "bucket")?.leaseUntil)
            // The dying instance stops renewing (its process ends); the living one renews every third of a lease.
            dying = nil
            await #expect(try other.recordPending([pending(1), pending(2)], at: t0) == [false, false])
            await #expect(try other.resetInterrupted(at: t0) == 0, "a lease that still runs is its holder's")
            try await Task.sleep(for: .seconds(8))
            let claims = try await other.othersClaims()
            #expect(claims.expired == 1 && claims.live == 1, "\(claims)")
            let renewed = try await #require(try other.entry(key(2), destination: "bucket")?.leaseUntil)
            #expect(renewed > firstLease + 1, "the live lease was renewed (\(firstLease) -> \(renewed))")
            await #expect(try other.resetInterrupted(at: t0 + 1) == 1, "the dead instance's upload is pending again")
            let free = try await #require(try other.entry(key(1), destination: "bucket"))
            #expect(free.status == .pending && free.claimedBy == nil)
            await #expect(try other.recordPending([pending(1), pending(2)], at: t0 + 2) == [true, false])
            await #expect(try other.entry(key(1), destination: "bucket")?.claimedBy == other.instanceID)
        }
    }

    /// A destination that needs one writer is led by one instance; the lead passes on when its holder's connection
    /// ends (the process dies).
    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)))
    func oneLeaderPerDestinationHandedOverWhenItDies() async throws {
        defer { dir.remove() }
        try await LedgerEngine.postgres.withStates(dir) { state, _ in
            let location = try await state("fleet")
            var leader: Ledger? = try Ledger(state: location)
            let other = try Ledger(state: location)
            #expect(await leader?.leads("car", needsOneWriter: true) == true)
            #expect(await leader?.leads("car", needsOneWriter: true) == true, "asking again keeps the lead")
            #expect(!(await other.leads("car", needsOneWriter: true)))
            #expect(await other.leads("sheet", needsOneWriter: true), "each destination has its own leader")
            #expect(await other.leads("car", needsOneWriter: false), "a destination without the need is everyone's")
            leader = nil
            var handedOver = false
            for _ in 0..<50 where !handedOver {
                handedOver = await other.leads("car", needsOneWriter: true)
                if !handedOver { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(handedOver)
        }
        let sqlite = try Ledger(path: dir.file("state.sqlite").path)
        #expect(await sqlite.leads("car", needsOneWriter: true), "SQLite's one instance leads every destination")
    }

    /// `status` on a shared ledger: the uploads in flight of the whole fleet, each with the instance that holds it.
    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)))
    func statusShowsWhichInstanceHoldsWhichUpload() async throws {
        defer { dir.remove() }
        try await PostgresTestServer.withDatabase { url, _ in
            let config = try GatewayConfig.parse(text: """
                version: 1
                state: "\(url)"
                sources: [{name: outbox, path: outbox}]
                destinations: [{name: bucket, type: local, path: synced}]
                """, file: "plugins.yaml", baseDirectory: dir.url, registry: PluginRegistry([LocalDestination.registration]))
            let a = try Ledger(state: config.state, leaseSeconds: 30)
            let b = try Ledger(state: config.state, leaseSeconds: 30)
            let lock = StateLock(state: config.state)
            try lock.acquire()
            defer { lock.release() }
            await #expect(try a.recordPending([pending(1)], at: t0) == [true])
            await #expect(try b.recordPending([pending(2)], at: t0) == [true])
            try await a.markUploading(key(1), destination: "bucket", at: t0)
            try await b.markUploading(key(2), destination: "bucket", at: t0)
            let report = try await StatusReport.build(config: config, ledger: a, destination: nil, failedOnly: false, now: t0)
            #expect(Set(report.ongoing.compactMap(\.claimedBy)) == [a.instanceID, b.instanceID])
            #expect(report.text.contains("bucket  f1.bin  0%  (\(a.instanceID))"), "\(report.text)")
            #expect(report.text.contains("bucket  f2.bin  0%  (\(b.instanceID))"), "\(report.text)")
            let object = StatusReport.fileObject(try #require(report.ongoing.first { $0.file == key(2) }))
            #expect(object["claimed_by"] as? String == b.instanceID)
            #expect(object["lease_until"] is String)
        }
    }

    /// SQLite: one instance at a time (the lock file), so the claims a killed run left never hold up the next.
    @Test func sqliteClaimsNeverStandInTheWay() async throws {
        defer { dir.remove() }
        let path = dir.file("state.sqlite").path
        var first: Ledger? = try Ledger(path: path)
        #expect(first?.sharesWork == false)
        await #expect(try first?.recordPending([pending(1)], at: t0) == [true])
        try await first?.markUploading(key(1), destination: "bucket", at: t0)
        first = nil
        let next = try Ledger(path: path)
        await #expect(try next.entry(key(1), destination: "bucket")?.claimedBy != nil)
        await #expect(try next.resetInterrupted(at: t0 + 1) == 1)
        await #expect(try next.entry(key(1), destination: "bucket")?.claimedBy == nil)
        await #expect(try next.recordPending([pending(1)], at: t0 + 2) == [true])
        try await next.markSynced(key(1), destination: "bucket", receipt: Receipt(remoteName: "f1.bin"), size: 10, modificationTime: t0, sha256: "aa", at: t0 + 3)
        await #expect(try next.entry(key(1), destination: "bucket")?.claimedBy == nil)
    }
}
