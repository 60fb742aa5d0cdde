import Foundation
import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport
import Testing

/// The full walk of a shared source split between a fleet's instances (``FleetView``): two ``Ledger`` objects on
/// one PostgreSQL database are two instances, each running the real engine into a real local folder. Each walks
/// and plans only its share; a share left unwalked by an instance that leaves is walked by the other.
@Suite("fleet: the walk of a shared source is split between the instances", .serialized)
struct FleetSplitTests {
    let dir: TemporaryDirectory
    static let fileCount = 90

    init() throws { dir = try TemporaryDirectory("sg-fleet-split") }

    @Test func everyFileBelongsToExactlyOneInstanceOfAView() {
        let ids = ["host:11:aa", "host:12:bb", "other:7:cc"]
        let views = ids.map { FleetView(members: ids.reversed(), me: $0) }
        #expect(Set(views.map(\.signature)).count == 1, "the same members in any order give one view")
        var shares = [0, 0, 0]
        for n in 0..<3000 {
            let owners = views.indices.filter { views[$0].owns(source: "outbox", path: "d\(n % 17)/f\(n).bin") }
            #expect(owners.count == 1)
            if let owner = owners.first { shares[owner] += 1 }
        }
        #expect(shares.allSatisfy { $0 > 900 }, "shares \(shares) of 3000")
        // Two instances split evenly names whose bytes have the same parity (here: made of even digits only), which
        // FNV-1a's low bit alone would give all to one of them.
        let pair = ids.prefix(2).map { FleetView(members: Array(ids.prefix(2)), me: $0) }
        func evenDigits(_ n: Int) -> String { String(String(n, radix: 5).map { "02468"[String.Index(utf16Offset: Int(String($0))!, in: "02468")] }) }
        let first = (0..<2000).filter { pair[0].owns(source: "outbox", path: "shots/img-\(evenDigits($0)).raw") }.count
        #expect((900...1100).contains(first), "\(first) of 2000 to the first of two")
        #expect(FleetView(members: [], me: "alone").owns(source: "outbox", path: "anything"))
    }

    func engine(_ ledger: Ledger) throws -> SyncEngine {
        let config = try GatewayConfig.parse(text: """
            version: 1
            sources:
              - {name: outbox, path: outbox}
            destinations:
              - {name: archive, type: local, path: archive}
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: PluginRegistry([LocalDestination.registration]))
        return SyncEngine(config: config, ledger: ledger)
    }

    func writeFiles() throws -> [String] {
        let paths = (0..<Self.fileCount).map { "d\($0 % 7)/f\($0).txt" }
        for path in paths { try dir.write("outbox/" + path, "content of \(path)") }
        return paths
    }

    func delivered(_ paths: [String]) -> [String] { paths.filter { (try? dir.read("archive/" + $0)) != nil } }

    /// Two instances on `location`, both registered, and the view they then share.
    func twoInstances(_ location: StateLocation) async throws -> (a: Ledger, b: Ledger, view: FleetView) {
        let a = try Ledger(state: location, leaseSeconds: 30)
        let b = try Ledger(state: location, leaseSeconds: 30)
        _ = try await a.fleetView()
        let viewB = try await #require(try b.fleetView())
        let view = try await #require(try a.fleetView())
        #expect(view.members == viewB.members && view.members.count == 2)
        return (a, b, view)
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)))
    func twoInstancesEachWalkTheirShare() async throws {
        defer { dir.remove() }
        let paths = try writeFiles()
        try await LedgerEngine.postgres.withStates(dir) { state, _ in
            let (a, b, viewA) = try await twoInstances(try await state("fleet"))
            let shareA = paths.filter { viewA.owns(source: "outbox", path: $0) }

            async let runA = engine(a).run()
            async let runB = engine(b).run()
            let (summaryA, summaryB) = try await (runA, runB)
            #expect(summaryA.exitCode == 0 && summaryB.exitCode == 0)
            // Each planned its share only: together every file once.
            #expect(summaryA.files == shareA.count, "A planned \(summaryA.files), its share is \(shareA.count)")
            #expect(summaryA.files + summaryB.files == Self.fileCount)
            #expect(summaryA.files > 0 && summaryB.files > 0)
            #expect(delivered(paths).count == Self.fileCount)
            let rows = try await a.entries()
            #expect(rows.count == Self.fileCount && rows.allSatisfy { $0.status == .synced && $0.claimedBy == nil })
            await #expect(try a.fleetWalked(viewA, destinations: ["archive"]))
        }
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)))
    func aShareLeftUnwalkedIsWalkedByTheOthers() async throws {
        defer { dir.remove() }
        let paths = try writeFiles()
        try await LedgerEngine.postgres.withStates(dir) { state, _ in
            let (a, b, view) = try await twoInstances(try await state("fleet"))
            let shareA = paths.filter { view.owns(source: "outbox", path: $0) }
            #expect(shareA.count < Self.fileCount)

            // A walks its share and waits for B's; B leaves without walking: A walks again, alone, and sends all.
            let run = Task { try await engine(a).run() }
            let deadline = Date().addingTimeInterval(60)
            while delivered(paths).count < shareA.count, Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
            #expect(delivered(paths) == shareA, "A sent its share first, and only it")
            await #expect(try !a.fleetWalked(view, destinations: ["archive"]), "B has not walked its share")
            b.leaveFleet()
            let summary = try await run.value
            #expect(summary.exitCode == 0)
            #expect(summary.files == Self.fileCount, "the last walk was whole")
            #expect(delivered(paths).count == Self.fileCount)
        }
    }

    /// The looks at the fleet while a walk runs only read: a look sees who registered, and an instance that left is
    /// not brought back by its own look (only registering, at a walk's start, does that).
    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)))
    func aLookAtTheFleetReadsAndRegistersNothing() async throws {
        defer { dir.remove() }
        try await LedgerEngine.postgres.withStates(dir) { state, _ in
            let (a, b, view) = try await twoInstances(try await state("fleetlook"))
            await #expect(try a.liveFleetView() == view, "a look sees both, as registering did")
            b.leaveFleet()
            let own = try await #require(try b.liveFleetView())
            #expect(Set(own.members) == [a.instanceID, b.instanceID], "B's own view holds B, whatever its row says")
            await #expect(try a.liveFleetView()?.isAlone == true, "B's look did not bring it back")
            _ = try await b.fleetView()
            await #expect(try a.liveFleetView() == view, "registering does")
        }
        let sqlite = try Ledger(state: .sqlite(path: dir.url.appendingPathComponent("state.sqlite").path))
        await #expect(try sqlite.liveFleetView() == nil, "one instance on SQLite: no fleet to look at")
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)))
    func anInstanceJoiningMidWalkMakesTheOthersWalkTheirNewShare() async throws {
        defer { dir.remove() }
        try await LedgerEngine.postgres.withStates(dir) { state, _ in
            let location = try await state("fleet")
            let a = try Ledger(state: location, leaseSeconds: 30)
            let alone = try await #require(try a.fleetView())
            #expect(alone.isAlone)
            try await a.noteWalked(alone, destinations: ["archive"])
            await #expect(try !a.fleetChanged(since: alone, destinations: ["archive"]))
            let b = try Ledger(state: location, leaseSeconds: 30)
            let both = try await #require(try b.fleetView())
            await #expect(try a.fleetChanged(since: alone, destinations: ["archive"]), "B joined: A's share moved")
            await #expect(try !b.fleetChanged(since: both, destinations: ["archive"]))
            try await b.noteWalked(both, destinations: ["archive"])
            // A walks its share of the new view; then B leaving changes nothing: its share of that view is walked.
            try await a.noteWalked(try #require(try a.fleetView()), destinations: ["archive"])
            await #expect(try a.fleetWalked(both, destinations: ["archive"]))
            b.leaveFleet()
            await #expect(try !a.fleetChanged(since: both, destinations: ["archive"]))
            await #expect(try a.fleetChanged(since: both, destinations: ["archive", "bucket"]), "B walked no share for the bucket")
            await #expect(try a.fleetView()?.isAlone == true)
        }
    }
}
