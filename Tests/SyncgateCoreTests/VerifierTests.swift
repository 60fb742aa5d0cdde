import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// ``Verifier`` against a ledger and a destination whose listing the test sets: what counts as missing, different and
/// extra, what a partial listing proves, and that a repair only marks rows pending.
@Suite("verifier: ledger against a listing")
struct VerifierTests {
    /// A destination that lists what it is given.
    struct ListedDestination: Destination {
        var listing: RemoteListing
        func upload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt { Receipt(remoteName: item.remoteName) }
        func delete(remoteName: String) async throws { Issue.record("a verification never deletes (\(remoteName))") }
        func list() async throws -> RemoteListing { listing }
    }

    let dir: TemporaryDirectory
    let clock = VirtualClock(start: Date(timeIntervalSince1970: 1_900_000_000))

    init() throws { dir = try TemporaryDirectory("sg-verifier") }

    /// A ledger with `synced` rows (name -> size and etag) and `pending` rows, at destination `d`.
    func ledger(synced: [String: (Int64, String)], pending: [String] = []) async throws -> Ledger {
        let ledger = try Ledger(path: dir.file("state.sqlite").path)
        let t = clock.now()
        let rows = (Array(synced.keys) + pending).map {
            Ledger.Pending(file: FileKey(source: "outbox", path: $0), destination: "d", size: synced[$0]?.0 ?? 5, modificationTime: t,
                           sha256: "aa", contentChanged: true)
        }
        try await ledger.recordPending(rows, at: t)
        for (name, (size, etag)) in synced {
            try await ledger.markSynced(FileKey(source: "outbox", path: name), destination: "d", receipt: Receipt(remoteName: name, etag: etag),
                                        size: size, modificationTime: t, sha256: "aa", at: t)
        }
        return ledger
    }

    @Test func findsMissingDifferentAndExtraAndRepairsOnlyWhatIsAsked() async throws {
        defer { dir.remove() }
        let ledger = try await ledger(synced: ["a": (5, "e1"), "b": (5, "e2"), "c": (5, "e3"), "d": (5, "e4")], pending: ["p"])
        let listing = RemoteListing(entries: [
            .init(name: "b", size: 5, checksum: "other"), .init(name: "c", size: 3, checksum: "e3"), .init(name: "d", size: 5, checksum: "e4"),
            .init(name: "p", size: 5), .init(name: "x", size: 1),
        ])
        let report = try await Verifier(name: "d", destination: ListedDestination(listing: listing), ledger: ledger, clock: clock).run()
        #expect(Dictionary(uniqueKeysWithValues: report.findings.map { ($0.remoteName, $0.kind) })
                == ["a": .missing, "b": .different, "c": .different, "x": .extra], "the pending row is neither missing nor extra")
        #expect(report.record.checked == 4 && report.record.repaired == 0)
        await #expect(try ledger.entries(destination: "d").filter { $0.status == .synced }.count == 4, "no repair without asking")

        let repaired = try await Verifier(name: "d", destination: ListedDestination(listing: listing), ledger: ledger, clock: clock, repair: true).run()
        #expect(repaired.record.repaired == 3)
        let rows = Dictionary(uniqueKeysWithValues: try await ledger.entries(destination: "d").map { ($0.file.path, $0.status) })
        #expect(rows == ["a": .pending, "b": .pending, "c": .pending, "d": .synced, "p": .pending])
        await #expect(try ledger.verifications()["d"]?.repaired == 3)
    }

    /// A listing that may leave names out (a head unit's ListFiles beyond 1,000) proves nothing about a name it lacks.
    @Test func aPartialListingReportsNothingMissing() async throws {
        defer { dir.remove() }
        let ledger = try await ledger(synced: ["a": (5, "e1"), "b": (5, "e2")])
        let listing = RemoteListing(entries: [.init(name: "b")], isComplete: false)
        let report = try await Verifier(name: "d", destination: ListedDestination(listing: listing), ledger: ledger, clock: clock, repair: true).run()
        #expect(report.findings.isEmpty && report.unconfirmed == 1 && report.record.repaired == 0, "\(report.findings)")
        await #expect(try ledger.entries(destination: "d").allSatisfy { $0.status == .synced })
    }
}
