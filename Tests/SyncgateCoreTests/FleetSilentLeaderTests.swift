import Foundation
@testable import SyncgateCore
import SyncgateTestSupport
import Testing

/// A `sync` on a shared ledger leaves a destination that needs one writer to the instance that leads it. When that
/// destination still has files to send at the end of the run, the run watches the lead instead of exiting 0 at
/// once: a leader that renews its lead keeps its files; a lead released (its holder died, its session ended) is
/// taken and the files sent; a lead neither renewed nor released (a frozen leader whose session lingers) makes the
/// destination unavailable for this run (exit 75). Real PostgreSQL; two ``Ledger`` objects are two instances.
@Suite("fleet: a sync watches the lead of a destination it left to another instance", .serialized)
struct FleetSilentLeaderTests {
    let dir: TemporaryDirectory
    static let fileCount = 10
    /// The class of the leads' advisory locks (``DestinationLeadership/lockClass``) as `pg_locks.classid` shows it.
    static let leadLocks = "locktype = 'advisory' AND classid = \(UInt32(bitPattern: DestinationLeadership.lockClass))"

    init() throws { dir = try TemporaryDirectory("sg-fleet-leader") }

    /// An engine of instance `ledger` with one destination, `sheet`, that needs one writer.
    func engine(_ ledger: Ledger, _ sheet: FlakyDestination) throws -> SyncEngine {
        let registry = PluginRegistry([PluginRegistration(type: "flaky", summary: "test") { _ in sheet }])
        let config = try GatewayConfig.parse(text: """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: sheet, type: flaky}]
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: registry)
        return SyncEngine(config: config, ledger: ledger)
    }

    /// Leader L leads `sheet` and has recorded every file for it; its claims are let go (as a dead leader's lapse), so
    /// that only the lead stands between another instance and the files.
    func leaderWithFiles(_ location: StateLocation, lease: Double = 4) async throws -> Ledger {
        for index in 0..<Self.fileCount { try dir.write("outbox/r\(index).txt", "record \(index)") }
        let leader = try Ledger(state: location, leaseSeconds: lease)
        #expect(await leader.leads("sheet", needsOneWriter: true))
        let rows = (0..<Self.fileCount).map {
            Ledger.Pending(file: FileKey(source: "outbox", path: "r\($0).txt"), destination: "sheet", size: 8, modificationTime: Date(),
                           sha256: nil, contentChanged: false)
        }
        #expect(try await leader.recordPending(rows, at: Date()).allSatisfy { $0 })
        try await leader.releaseClaims(destination: "sheet")
        return leader
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)), .timeLimit(.minutes(15)))
    func aLeadReleasedMidRunIsTakenAndItsFilesSent() async throws {
        defer { dir.remove() }
        try await PostgresTestServer.withDatabase { url, server in
            let location = StateLocation.postgres(try PostgresStateLocation.parse(url))
            // A lease of 10 s: the other run watches the lead for a lease and a half, and the release below must come
            // within that on a loaded machine too (with 4 s it came too late once, in a full run under stress-ng).
            let leader = try await leaderWithFiles(location, lease: 10)
            let other = try Ledger(state: location, leaseSeconds: 10)
            let sheet = FlakyDestination()
            sheet.oneWriter = true
            // The leader dies: its renewals stop, and a moment into the other's run its session ends (the server
            // releases its lock).
            leader.leases.stop()
            let run = Task { try await engine(other, sheet).run() }
            try await Task.sleep(for: .seconds(1))
            // Only this test's database: pg_locks shows every database's advisory locks, and other tests of this
            // process hold leads of their own on the shared server (ending theirs failed LedgerClaimTests once).
            _ = try await server.psql("""
                SELECT pg_terminate_backend(pid) FROM pg_locks
                WHERE \(Self.leadLocks) AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                """, database: try PostgresStateLocation.parse(url).database)
            let summary = try await run.value
            #expect(summary.exitCode == 0, "\(summary.away)")
            #expect(sheet.storedNames.count == Self.fileCount, "the files left to the dead leader were sent")
            #expect(try await other.entries().allSatisfy { $0.status == .synced })
        }
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)), .timeLimit(.minutes(15)))
    func aLeaderThatRenewsKeepsItsFiles() async throws {
        defer { dir.remove() }
        try await PostgresTestServer.withDatabase { url, _ in
            let location = StateLocation.postgres(try PostgresStateLocation.parse(url))
            let leader = try await leaderWithFiles(location)
            let other = try Ledger(state: location, leaseSeconds: 4)
            let sheet = FlakyDestination()
            sheet.oneWriter = true
            let summary = try await engine(other, sheet).run()
            #expect(summary.exitCode == 0, "a live leader's files are its own: \(summary.away)")
            #expect(summary.away.isEmpty)
            #expect(sheet.storedNames.isEmpty, "nothing sent beside the leader")
            #expect(!other.holdsLead("sheet"))
            #expect(leader.holdsLead("sheet"))
        }
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)), .timeLimit(.minutes(15)))
    func aLeadNeitherRenewedNorReleasedLeavesTheDestinationUnavailable() async throws {
        defer { dir.remove() }
        try await PostgresTestServer.withDatabase { url, _ in
            let location = StateLocation.postgres(try PostgresStateLocation.parse(url))
            let leader = try await leaderWithFiles(location)
            // Frozen: no renewal, but its session (and lock) stays.
            leader.leases.stop()
            let other = try Ledger(state: location, leaseSeconds: 4)
            let sheet = FlakyDestination()
            sheet.oneWriter = true
            let summary = try await engine(other, sheet).run()
            #expect(summary.exitCode == ExitStatus.retryScheduled)
            let away = try #require(summary.away.first)
            #expect(away.name == "sheet" && away.state == .unavailable && away.code == "leader-silent")
            #expect(away.waiting == Self.fileCount)
            #expect(sheet.storedNames.isEmpty, "nothing sent while another instance may lead")
            #expect(leader.holdsLead("sheet"))
        }
    }
}
