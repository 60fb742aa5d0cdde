import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// Where a destination's copies go (schema 9, ``Ledger/noteTarget(_:_:at:)``): recorded the first time without
/// changing anything, compared at each run, and when it changed, the rows synced there made pending again; never
/// the rows of other destinations, of files gone from their sources, or not synced; on a shared ledger, never while
/// another live instance records it otherwise.
@Suite("state ledger: where a destination's copies go")
struct DestinationTargetTests {
    let dir: TemporaryDirectory
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    init() throws { dir = try TemporaryDirectory("sg-targets") }

    func key(_ name: String) -> FileKey { FileKey(source: "outbox", path: name) }

    /// `synced` at `destination` (one attempt counted), or left pending.
    func row(_ ledger: Ledger, _ name: String, at destination: String = "archive", synced: Bool = true) async throws {
        try await ledger.recordPending([Ledger.Pending(file: key(name), destination: destination, size: 4, modificationTime: t0,
                                                       sha256: "aa", contentChanged: false)], at: t0)
        guard synced else { return }
        try await ledger.markUploading(key(name), destination: destination, at: t0 + 1)
        try await ledger.markSynced(key(name), destination: destination, receipt: Receipt(remoteName: name), size: 4, modificationTime: t0,
                                    sha256: "aa", at: t0 + 2)
    }

    @Test(arguments: LedgerEngine.testable) func aChangedTargetMakesOnlyItsSyncedRowsPending(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let ledger = try Ledger(state: try await state("state"))
            let first = DestinationTarget(description: "/data/archive")
            try await row(ledger, "a.txt")
            try await row(ledger, "gone.txt")
            try await row(ledger, "waiting.txt", synced: false)
            try await row(ledger, "a.txt", at: "other")
            _ = try ledger.markRemoved([key("gone.txt")], at: t0 + 3)

            // The first time (a new ledger, or one from before schema 9): recorded, nothing else changes.
            await #expect(try ledger.noteTarget("archive", first, at: t0 + 4) == .first)
            await #expect(try ledger.entry(key("a.txt"), destination: "archive")?.status == .synced)
            await #expect(try ledger.recordedTargetDigests() == ["archive": first.digest])
            await #expect(try ledger.noteTarget("archive", first, at: t0 + 5) == .same)
            await #expect(try ledger.entry(key("a.txt"), destination: "archive")?.status == .synced)

            // Pointed elsewhere: the one synced row of a file still in its source is pending again, with a note and
            // its attempt still counted (so that a destination that can look asks before it sends).
            let moved = DestinationTarget(description: "/mnt/new/archive")
            await #expect(try ledger.noteTarget("archive", moved, at: t0 + 6) == .changed(was: "/data/archive", marked: 1))
            let a = try await #require(try ledger.entry(key("a.txt"), destination: "archive"))
            #expect(a.status == .pending)
            #expect(a.attempts == 1)
            #expect(a.lastError == "the destination now points at /mnt/new/archive (it was /data/archive): sent again")
            await #expect(try ledger.entry(key("gone.txt"), destination: "archive")?.status == .synced, "gone from its source: nothing to send")
            await #expect(try ledger.entry(key("waiting.txt"), destination: "archive")?.status == .pending)
            await #expect(try ledger.entry(key("a.txt"), destination: "other")?.status == .synced, "another destination")
            await #expect(try ledger.recordedTargetDigests() == ["archive": moved.digest])
            // `delete_remote` deletes nothing at the new place: not the copy of the file removed before the change
            // (it is at the old place), nor that of a file removed after it, before it was sent again.
            await #expect(try ledger.remoteDeletions(destination: "archive").isEmpty)
            _ = try ledger.markRemoved([key("a.txt")], at: t0 + 6)
            await #expect(try ledger.remoteDeletions(destination: "archive").isEmpty)
            await #expect(try ledger.remoteDeletions(destination: "other").map(\.file) == [key("a.txt")], "another destination's copy is")
            try ledger.clearRemoved([key("a.txt")], at: t0 + 6)

            // Delivered again, then the same target: nothing more.
            try await ledger.markSynced(key("a.txt"), destination: "archive", receipt: Receipt(remoteName: "a.txt"), size: 4,
                                        modificationTime: t0, sha256: "aa", at: t0 + 7)
            await #expect(try ledger.noteTarget("archive", moved, at: t0 + 8) == .same)
            await #expect(try ledger.entry(key("a.txt"), destination: "archive")?.status == .synced)
        }
    }

    /// Only the identity is compared: the description may change with it the same (a capability URL is the
    /// identity, described by its host alone), and the ledger keeps a digest of the identity, not the identity.
    @Test func theIdentityIsComparedAndStoredAsADigest() async throws {
        defer { dir.remove() }
        let ledger = try Ledger(path: dir.path + "/state.sqlite")
        try await row(ledger, "a.txt", at: "sheet")
        let url = "https://script.google.com/macros/s/AKfycbSECRET/exec"
        await #expect(try ledger.noteTarget("sheet", DestinationTarget(description: "an Apps Script web app at script.google.com", identity: url), at: t0) == .first)
        await #expect(try ledger.noteTarget("sheet", DestinationTarget(description: "another wording", identity: url), at: t0 + 1) == .same)
        await #expect(try ledger.entry(key("a.txt"), destination: "sheet")?.status == .synced)
        // The state file and its write-ahead log, as bytes: the digest is there (so the rows are read), the URL not.
        var text = ""
        for name in try FileManager.default.contentsOfDirectory(atPath: dir.path) where name.hasPrefix("state.sqlite") {
            text += String(decoding: try Data(contentsOf: URL(fileURLWithPath: dir.path + "/" + name)), as: UTF8.self)
        }
        #expect(text.contains(DestinationTarget(description: "", identity: url).digest))
        #expect(!text.contains("AKfycbSECRET"), "the web app's URL is not in the state file")
    }

    /// Two instances of a fleet whose configs put the destination in two places would each undo the other at every
    /// run: while the one that recorded it is alive, the other changes nothing; once it left, the change is made.
    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)))
    func aTargetAnotherLiveInstanceRecordedIsLeftAlone() async throws {
        defer { dir.remove() }
        try await LedgerEngine.postgres.withStates(dir) { state, _ in
            let location = try await state("fleet")
            let a = try Ledger(state: location, leaseSeconds: 30)
            let b = try Ledger(state: location, leaseSeconds: 30)
            _ = try await a.fleetView()  // registers A
            _ = try await b.fleetView()
            try await row(a, "a.txt")
            await #expect(try a.noteTarget("archive", DestinationTarget(description: "s3://one/"), at: t0) == .first)
            await #expect(try b.noteTarget("archive", DestinationTarget(description: "s3://two/"), at: t0 + 1)
                          == .disagreement(was: "s3://one/", by: a.instanceID))
            await #expect(try b.entry(key("a.txt"), destination: "archive")?.status == .synced)
            await #expect(try b.recordedTargetDigests() == ["archive": DestinationTarget(description: "s3://one/").digest])

            a.leaveFleet()
            await #expect(try b.noteTarget("archive", DestinationTarget(description: "s3://two/"), at: t0 + 2)
                          == .changed(was: "s3://one/", marked: 1))
            await #expect(try b.entry(key("a.txt"), destination: "archive")?.status == .pending)
        }
    }
}
