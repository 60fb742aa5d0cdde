import Foundation
import Synchronization
@testable import SyncgateCore
import SyncgateTestSupport
import Testing

/// Files taken over from an instance that died (its lease ended) may already be at the destination: on a destination
/// where a resend is harmless (S3), attempt starts are written in batches, so a killed instance's last uploads can
/// have reached the destination with their rows still `pending` under its claim. The next holder asks the
/// destination first and sends only what it does not hold; files nobody held are sent without asking.
@Suite("fleet: files taken over from a dead instance are looked for before they are sent", .serialized)
struct FleetTakeoverTests {
    let dir: TemporaryDirectory

    init() throws { dir = try TemporaryDirectory("sg-fleet-takeover") }

    @Test func whichRowsHaveAnUnknownOutcome() {
        let me = "host:1:me"
        var row = LedgerEntry(file: FileKey(source: "outbox", path: "a.txt"), destination: "store", status: .pending, attempts: 0,
                              failedRuns: 0, size: 1, modificationTime: Date(), bytesDone: 0, updatedAt: Date())
        #expect(!DestinationRun.outcomeUnknown(row, instanceID: me), "a row nobody held nor tried: sent without asking")
        row.claimedBy = me
        #expect(!DestinationRun.outcomeUnknown(row, instanceID: me), "its own claim, no attempt")
        row.claimedBy = "host:2:dead"
        #expect(DestinationRun.outcomeUnknown(row, instanceID: me), "claimed by another instance: it may have sent it")
        row.claimedBy = nil
        row.attempts = 1
        #expect(DestinationRun.outcomeUnknown(row, instanceID: me), "an attempt was recorded")
        row.status = .synced
        row.claimedBy = "host:2:dead"
        #expect(!DestinationRun.outcomeUnknown(row, instanceID: me), "synced rows are not sent at all")
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)), .timeLimit(.minutes(30)))
    func aDeadInstancesClaimsAreLookedForFirst() async throws {
        defer { dir.remove() }
        try await LedgerEngine.postgres.withStates(dir) { state, _ in
            let location = try await state("fleet")
            let names = ["sent.txt", "unsent.txt", "fresh.txt"]
            for name in names { try dir.write("outbox/" + name, "content of \(name)") }
            func pending(_ name: String) throws -> Ledger.Pending {
                let attributes = try FileManager.default.attributesOfItem(atPath: dir.file("outbox/" + name).path)
                return Ledger.Pending(file: FileKey(source: "outbox", path: name), destination: "store",
                                      size: Int64((attributes[.size] as? Int) ?? 0), modificationTime: (attributes[.modificationDate] as? Date) ?? Date(),
                                      sha256: nil, contentChanged: false, unlessSynced: true)
            }
            // The dying instance claimed two files and sent one of them; then it was killed before it recorded
            // anything more (no attempt start, no outcome).
            var dying: Ledger? = try Ledger(state: location, leaseSeconds: 1)
            await #expect(try dying?.recordPending([try pending("sent.txt"), try pending("unsent.txt")], at: Date()) == [true, true])
            let store = HoldingDestination.Store()
            store.place("sent.txt")
            dying = nil
            try await Task.sleep(for: .milliseconds(2500))  // its leases end

            let survivor = try Ledger(state: location, leaseSeconds: 30)
            let summary = try await engine(survivor, store: store).run()
            #expect(summary.failed == 0)
            #expect(store.uploads == ["fresh.txt": 1, "unsent.txt": 1], "sent.txt was already there: not sent again")
            #expect(store.asked == ["sent.txt", "unsent.txt"], "only the taken-over files were looked for")
            for name in names {
                await #expect(try survivor.entry(FileKey(source: "outbox", path: name), destination: "store")?.status == .synced, "\(name)")
            }
        }
    }

    /// A dead instance's rows are sent by the instance that frees them, whatever the fleet's shares. Here another
    /// instance is alive (its membership renewed) but walks nothing, so the survivor's walk covers only its own share
    /// of the view; the dead instance held files in both shares. (The bench's fleet faults once ended with 5 of 200
    /// files never sent and every `sync` exiting 0: the instance that reset the gone instance's claims walked only
    /// its share, and those whose share held the rest found no expired claim left to take over.)
    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)), .timeLimit(.minutes(30)))
    func aDeadInstancesFilesInAnotherInstancesShareAreSentByTheOneThatFreesThem() async throws {
        defer { dir.remove() }
        try await LedgerEngine.postgres.withStates(dir) { state, _ in
            let location = try await state("fleet_shares")
            let names = (0..<40).map { "f\($0).txt" }
            var pendings: [Ledger.Pending] = []
            for name in names {
                try dir.write("outbox/" + name, "content of \(name)")
                let attributes = try FileManager.default.attributesOfItem(atPath: dir.file("outbox/" + name).path)
                pendings.append(Ledger.Pending(file: FileKey(source: "outbox", path: name), destination: "store",
                                               size: Int64((attributes[.size] as? Int) ?? 0), modificationTime: (attributes[.modificationDate] as? Date) ?? Date(),
                                               sha256: nil, contentChanged: false, unlessSynced: true))
            }
            var dying: Ledger? = try Ledger(state: location, leaseSeconds: 1)
            await #expect(try dying?.recordPending(pendings, at: Date()) == Array(repeating: true, count: names.count))
            dying = nil
            try await Task.sleep(for: .milliseconds(2500))  // its leases end

            // Another instance, alive, in the fleet: the survivor's walk is split in two.
            let bystander = try Ledger(state: location, leaseSeconds: 60)
            let view = try await #require(try bystander.fleetView())
            let survivor = try Ledger(state: location, leaseSeconds: 2)
            let store = HoldingDestination.Store()
            let theirs = names.filter { !FleetView(members: view.members + [survivor.instanceID], me: survivor.instanceID).owns(source: "outbox", path: $0) }
            try #require(!theirs.isEmpty, "the bystander's share holds some of the files")
            let summary = try await engine(survivor, store: store).run()
            #expect(summary.failed == 0)
            #expect(store.uploads == Dictionary(uniqueKeysWithValues: names.map { ($0, 1) }), "every file once, \(theirs.count) of them in the bystander's share")
            for name in names {
                await #expect(try survivor.entry(FileKey(source: "outbox", path: name), destination: "store")?.status == .synced, "\(name)")
            }
            bystander.leaveFleet()
        }
    }

    func engine(_ ledger: Ledger, store: HoldingDestination.Store) throws -> SyncEngine {
        let registry = PluginRegistry([PluginRegistration(type: "holding", summary: "test") { _ in HoldingDestination(store: store) }])
        let config = try GatewayConfig.parse(text: """
            version: 1
            sources:
              - {name: outbox, path: outbox}
            destinations:
              - {name: store, type: holding}
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: registry)
        return SyncEngine(config: config, ledger: ledger)
    }
}

/// A destination that keeps the names it holds, counts uploads per name and records which names it was asked about;
/// a resend is harmless there (as on S3), so attempt starts are written in batches.
struct HoldingDestination: Destination {
    final class Store: Sendable {
        private let state = Mutex((held: Set<String>(), uploads: [String: Int](), asked: Set<String>()))
        func place(_ name: String) { state.withLock { _ = $0.held.insert(name) } }
        var uploads: [String: Int] { state.withLock { $0.uploads } }
        var asked: Set<String> { state.withLock { $0.asked } }
        func upload(_ name: String) { state.withLock { $0.uploads[name, default: 0] += 1; $0.held.insert(name) } }
        func ask(_ name: String) -> Bool { state.withLock { $0.asked.insert(name); return $0.held.contains(name) } }
    }

    let store: Store
    var resendIsHarmless: Bool { true }
    /// Distinct names, as S3's keys: a fleet splits the walk of its source between the instances.
    var remoteNamesAreDistinct: Bool { true }

    func upload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt {
        store.upload(item.remoteName)
        return Receipt(remoteName: item.remoteName)
    }

    func existingCopy(of item: UploadItem) async throws -> Receipt? {
        store.ask(item.remoteName) ? Receipt(remoteName: item.remoteName) : nil
    }

    func delete(remoteName: String) async throws {}
    func list() async throws -> RemoteListing { RemoteListing(entries: []) }
}
