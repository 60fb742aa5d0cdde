import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// The ledger's record of each source's root (``Ledger/recordSourceRoot(_:)``) and of the copies a mirror deleted
/// (``Ledger/noteRemoteDeletions(_:destination:at:window:)``), on each engine.
@Suite("state ledger: source roots and remote deletions", .serialized)
struct SourceRootLedgerTests {
    let dir: TemporaryDirectory
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    init() throws { dir = try TemporaryDirectory("sg-roots") }

    @Test(arguments: LedgerEngine.testable) func aSourceRootIsRecordedAndReplaced(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let ledger = try Ledger(state: try await state("state"))
            #expect(try ledger.sourceRoots().isEmpty, "nothing recorded before a first complete walk")
            let first = SourceRoot(source: "outbox", device: "2049", inode: "18446744073709551615", files: 50, walkedAt: t0)
            try ledger.recordSourceRoot(first)
            try ledger.recordSourceRoot(SourceRoot(source: "inbox", device: "64", inode: "2", files: 0, walkedAt: t0 + 1))
            #expect(try ledger.sourceRoots()["outbox"] == first, "device and inode kept as text, whatever their size")
            let second = SourceRoot(source: "outbox", device: "47", inode: "1", files: 30, walkedAt: t0 + 60)
            try ledger.recordSourceRoot(second)
            let roots = try ledger.sourceRoots()
            #expect(roots.count == 2)
            #expect(roots["outbox"] == second)
            #expect(roots["inbox"]?.files == 0)
        }
    }

    @Test(arguments: LedgerEngine.testable) func remoteDeletionsAreSummedOverTheWindowAndPruned(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let ledger = try Ledger(state: try await state("state"))
            let hour: TimeInterval = 3600
            await #expect(try ledger.remoteDeletions(destination: "mirror", within: hour, before: t0) == 0)
            try await ledger.noteRemoteDeletions(40, destination: "mirror", at: t0, window: hour)
            try await ledger.noteRemoteDeletions(30, destination: "mirror", at: t0 + 600, window: hour)
            try await ledger.noteRemoteDeletions(7, destination: "bucket", at: t0 + 600, window: hour)
            try await ledger.noteRemoteDeletions(0, destination: "mirror", at: t0 + 700, window: hour)
            try await ledger.noteRemoteDeletions(3, destination: "mirror", at: t0 + 600, window: hour)  // the same moment: added
            await #expect(try ledger.remoteDeletions(destination: "mirror", within: hour, before: t0 + 700) == 73)
            await #expect(try ledger.remoteDeletions(destination: "bucket", within: hour, before: t0 + 700) == 7)
            // An hour after the first batch, only the second counts.
            await #expect(try ledger.remoteDeletions(destination: "mirror", within: hour, before: t0 + hour + 1) == 33)
            // A write prunes that destination's rows older than the window: they are gone even for a wider look.
            try await ledger.noteRemoteDeletions(5, destination: "mirror", at: t0 + hour + 1, window: hour)
            await #expect(try ledger.remoteDeletions(destination: "mirror", within: 10 * hour, before: t0 + hour + 1) == 38)
            await #expect(try ledger.remoteDeletions(destination: "bucket", within: 10 * hour, before: t0 + hour + 1) == 7, "another destination's rows stay")
        }
    }
}
