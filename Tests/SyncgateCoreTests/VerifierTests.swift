import Foundation
import Synchronization
@testable import SyncgateCore
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

    /// A destination that hands its listing over in pages of `pageSize`, in the order given, and says whether that
    /// order is the names' byte order (`ordered`); it counts the pages asked for and the whole listings.
    struct PagedDestination: Destination {
        final class Calls: Sendable {
            let counts = Mutex((pages: 0, whole: 0))
            var pages: Int { counts.withLock { $0.pages } }
            var whole: Int { counts.withLock { $0.whole } }
        }
        var entries: [RemoteListing.Entry]
        var pageSize: Int
        var ordered: Bool
        var complete = true
        let calls = Calls()
        var remoteNamesAreDistinct: Bool { true }
        var verificationListingIsOrdered: Bool { ordered }
        func upload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt { Receipt(remoteName: item.remoteName) }
        func delete(remoteName: String) async throws { Issue.record("a verification never deletes (\(remoteName))") }
        func list() async throws -> RemoteListing { RemoteListing(entries: entries, isComplete: complete) }
        func verificationListing() async throws -> RemoteListing {
            calls.counts.withLock { $0.whole += 1 }
            return try await list()
        }
        func verificationListing(beforeRequest: () async throws -> Void, page: ([RemoteListing.Entry]) async throws -> Void) async throws -> Bool {
            for start in stride(from: 0, to: entries.count, by: pageSize) {
                try await beforeRequest()
                calls.counts.withLock { $0.pages += 1 }
                try await page(Array(entries[start..<min(start + pageSize, entries.count)]))
            }
            return complete
        }
    }

    /// A synced row: its source and path, its size, its receipt's ETag, and the name its receipt gives (the path when nil).
    struct Synced {
        var source = "outbox"
        var path: String
        var size: Int64 = 5
        var etag = "e"
        var remoteName: String?
    }

    /// A ledger with `synced` rows (name -> size and etag) and `pending` rows, at destination `d`.
    func ledger(synced: [String: (Int64, String)], pending: [String] = []) async throws -> Ledger {
        try await ledger(rows: synced.map { Synced(path: $0.key, size: $0.value.0, etag: $0.value.1) }, pending: pending)
    }

    /// A ledger with `rows` synced and `pending` rows of source `outbox`, at destination `d`.
    func ledger(rows: [Synced], pending: [String] = []) async throws -> Ledger {
        let ledger = try Ledger(path: dir.file("state.sqlite").path)
        let t = clock.now()
        let all = rows.map { ($0.source, $0.path, $0.size) } + pending.map { ("outbox", $0, Int64(5)) }
        try await ledger.recordPending(all.map {
            Ledger.Pending(file: FileKey(source: $0.0, path: $0.1), destination: "d", size: $0.2, modificationTime: t, sha256: "aa", contentChanged: true)
        }, at: t)
        for row in rows {
            try await ledger.markSynced(FileKey(source: row.source, path: row.path), destination: "d",
                                        receipt: Receipt(remoteName: row.remoteName ?? row.path, etag: row.etag),
                                        size: row.size, modificationTime: t, sha256: "aa", at: t)
        }
        return ledger
    }

    /// The findings as (name, kind) pairs, in any order.
    func kinds(_ report: VerificationReport) -> Set<String> {
        Set(report.findings.map { "\($0.kind) \($0.remoteName)" })
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

    /// Rows of two sources (one name held by both), names whose byte order differs from their order as folders
    /// (`a-b` before `a/x`) and from Swift's (`Z`, `é`), many pages on both sides: the merge finds what the whole
    /// listing held in memory finds, and never asks for the whole listing.
    @Test func anOrderedListingMergedPageByPageFindsWhatTheHeldOneFinds() async throws {
        defer { dir.remove() }
        var rows = (0..<300).map { Synced(path: "f\($0)") } + (0..<150).map { Synced(source: "second", path: "s/\($0)") }
        rows += ["a-b", "a/x", "a/y", "\u{e9}", "Z", "a"].map { Synced(path: $0) } + [Synced(source: "second", path: "a/x")]
        let ledger = try await ledger(rows: rows, pending: ["p1", "s/9x"])
        var names = Set(rows.map(\.path))
        names.subtract(["f7", "s/3", "a/y"])  // missing
        names.formUnion(["f7x", "zzz", "a/w", "p1", "0"])  // extra, but for the pending row p1
        let entries = names.sorted { ExactString.compare($0, $1) < 0 }.map { name in
            RemoteListing.Entry(name: name, size: name == "f10" ? 4 : 5, checksum: name == "a-b" ? "other" : "e")
        }
        let expected: Set<String> = ["missing f7", "missing s/3", "missing a/y", "different f10", "different a-b",
                                     "extra f7x", "extra zzz", "extra a/w", "extra 0"]

        let ordered = PagedDestination(entries: entries, pageSize: 13, ordered: true)
        var verifier = Verifier(name: "d", destination: ordered, ledger: ledger, clock: clock)
        verifier.rowPageSize = 7
        let merged = try await verifier.run()
        #expect(kinds(merged) == expected)
        #expect(merged.record.checked == rows.count && merged.listed == entries.count)
        #expect(ordered.calls.whole == 0 && ordered.calls.pages == (entries.count + 12) / 13 && merged.listingMerged, "merged page by page")

        let unordered = PagedDestination(entries: entries, pageSize: 13, ordered: false)
        let held = try await Verifier(name: "d", destination: unordered, ledger: ledger, clock: clock).run()
        #expect(kinds(held) == expected && held.record.checked == merged.record.checked && held.listed == merged.listed)
        #expect(unordered.calls.whole == 1)
    }

    /// A destination that says it lists in byte order but does not (an S3 directory bucket), and rows whose receipts
    /// name their copies out of the paths' order (a prefix changed since): the check compares in memory instead,
    /// and reports neither a false missing copy nor a false extra.
    @Test func aListingOrRowsOutOfOrderAreComparedInMemory() async throws {
        defer { dir.remove() }
        let ledger = try await ledger(rows: [Synced(path: "a", remoteName: "z/a"), Synced(path: "b"), Synced(path: "c")])
        let inOrder = ["b", "c", "x", "z/a"].map { RemoteListing.Entry(name: $0, size: 5, checksum: "e") }
        let rowsOutOfOrder = PagedDestination(entries: inOrder, pageSize: 2, ordered: true)
        let first = try await Verifier(name: "d", destination: rowsOutOfOrder, ledger: ledger, clock: clock).run()
        #expect(kinds(first) == ["extra x"] && first.record.checked == 3)
        #expect(rowsOutOfOrder.calls.whole == 1 && !first.listingMerged, "the merge gave up and the listing was held")

        let shuffled = [inOrder[3], inOrder[0], inOrder[2], inOrder[1]]
        let listingOutOfOrder = PagedDestination(entries: shuffled, pageSize: 1, ordered: true)
        let second = try await Verifier(name: "d", destination: listingOutOfOrder, ledger: ledger, clock: clock).run()
        #expect(kinds(second) == ["extra x"] && second.record.checked == 3)
        #expect(listingOutOfOrder.calls.whole == 1)
    }

    /// A merged listing that says at its end that it left names out: the rows it did not name are unconfirmed, not
    /// missing, and a repair marks none of them.
    @Test func aMergedPartialListingReportsNothingMissing() async throws {
        defer { dir.remove() }
        let ledger = try await ledger(rows: ["a", "b", "c"].map { Synced(path: $0) })
        var partial = PagedDestination(entries: [RemoteListing.Entry(name: "b", size: 5, checksum: "e")], pageSize: 10, ordered: true)
        partial.complete = false
        let report = try await Verifier(name: "d", destination: partial, ledger: ledger, clock: clock, repair: true).run()
        #expect(report.findings.isEmpty && report.unconfirmed == 2 && !report.listingIsComplete && report.record.repaired == 0)
        await #expect(try ledger.entries(destination: "d").allSatisfy { $0.status == .synced })
    }

    /// Each listing page is a request under the destination's `rate` (1 a second here): 6 pages take 5 s.
    @Test func listingPagesWaitForTheDestinationsRate() async throws {
        defer { dir.remove() }
        let ledger = try await ledger(rows: (0..<12).map { Synced(path: "f\($0)") })
        let entries = (0..<12).map { "f\($0)" }.sorted { ExactString.compare($0, $1) < 0 }.map { RemoteListing.Entry(name: $0, size: 5, checksum: "e") }
        let limits = DeliveryLimits(rate: RateLimit(requestsPerSecond: 1, burst: 1), minInterval: .zero, bandwidth: nil)
        let paced = VirtualClock(start: clock.now())
        let report = try await Verifier(name: "d", destination: PagedDestination(entries: entries, pageSize: 2, ordered: true),
                                        ledger: ledger, clock: paced, limits: limits).run()
        #expect(report.isClean && report.record.checked == 12)
        let waited = paced.sleeps.reduce(Duration.zero, +)
        #expect(waited >= .seconds(4.9) && waited <= .seconds(5.1), "\(waited)")
    }
}
