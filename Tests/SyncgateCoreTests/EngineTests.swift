import Foundation
@testable import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport
import Testing

/// The real engine (scan, plan, ledger, delivery layer) with a destination that fails on command.
@Suite("sync engine with a destination that fails on command")
struct EngineTests {
    let dir: TemporaryDirectory

    init() throws { dir = try TemporaryDirectory("sg-engine") }

    func engine(_ flaky: FlakyDestination, retry: String = "{ file: 2, artwork: 1, base_delay: 1s, max_delay: 4s, jitter: none }",
                clock: VirtualClock = VirtualClock(start: Date())) throws -> SyncEngine {
        let registry = PluginRegistry([PluginRegistration(type: "flaky", summary: "test") { setup in
            _ = try setup.decode(Empty.self)
            return flaky
        }])
        let config = try GatewayConfig.parse(text: """
            version: 1
            state: state/ledger.sqlite
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: car
                type: flaky
                concurrency: 2
                retry: \(retry)
            routes: [{match: ["**/*"], to: [car]}]
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: registry)
        return SyncEngine(config: config, ledger: try Ledger(path: config.statePath), clock: clock)
    }

    struct Empty: Decodable {}

    func writeOutbox(_ files: [String: String]) throws {
        for (path, text) in files { try dir.write("outbox/" + path, text) }
    }

    @Test func firstSyncDeliversAllSecondNothingChangedFileAgain() async throws {
        defer { dir.remove() }
        try writeOutbox(["a.txt": "alpha", "art/cover.png": "png-bytes", "deep/er/c.json": "{}"])
        let flaky = FlakyDestination()
        let engine = try engine(flaky)
        var summary = try await engine.run()
        #expect(summary.uploaded == 3)
        #expect(summary.exitCode == 0)
        #expect(flaky.storedNames == ["a.txt", "art/cover.png", "deep/er/c.json"])
        #expect(flaky.contents("art/cover.png") == Data("png-bytes".utf8))

        summary = try await engine.run()
        #expect(summary.uploaded == 0)
        #expect(summary.upToDate == 3)
        #expect(flaky.attemptCount("a.txt") == 1)

        // Same bytes, new time: not sent again. New bytes: sent again.
        try dir.write("outbox/a.txt", "alpha")
        try dir.write("outbox/deep/er/c.json", "{\"v\": 2}")
        summary = try await engine.run()
        #expect(summary.uploaded == 1)
        #expect(flaky.attemptCount("a.txt") == 1)
        #expect(flaky.contents("deep/er/c.json") == Data("{\"v\": 2}".utf8))
        let entries = try await engine.ledger.entries()
        #expect(entries.allSatisfy { $0.status == .synced })
        #expect(entries.count == 3)
    }

    @Test func noRowIsRecordedSyncedBeforeTheDestinationMadeItsCopyDurable() async throws {
        defer { dir.remove() }
        var files: [String: String] = [:]
        for i in 0..<300 { files["f\(i).txt"] = "file \(i)" }
        try writeOutbox(files)
        let flaky = FlakyDestination()
        flaky.failDurability = true
        let engine = try engine(flaky)
        let ledger = engine.ledger
        flaky.syncedInLedger = { Set(try ledger.blockingEntries().filter { $0.status == .synced }.map(\.file.path)) }
        // The flush fails: the run fails loudly and no row says synced.
        await #expect(throws: (any Error).self) { try await engine.run() }
        await #expect(try engine.ledger.entries().allSatisfy { $0.status != .synced })
        // It works again: everything ends synced, and every synced file had been flushed first.
        flaky.failDurability = false
        let summary = try await engine.run()
        #expect(summary.exitCode == 0)
        let entries = try await engine.ledger.entries()
        #expect(entries.count == 300 && entries.allSatisfy { $0.status == .synced })
        let flushed = flaky.durableSnapshots.reduce(into: Set<String>()) { $0.formUnion($1) }
        #expect(flushed == Set(files.keys))
        // At every flush, each row already synced had been covered by an earlier one.
        #expect(flaky.syncedBeforeFlush.isEmpty, "\(flaky.syncedBeforeFlush.prefix(5))")
        #expect(flaky.durableSnapshots.count > 1)
    }

    @Test func transientFailuresThenSuccessThroughTheEngine() async throws {
        defer { dir.remove() }
        try writeOutbox(["a.txt": "alpha"])
        let flaky = FlakyDestination(transientFailures: 2)
        let clock = VirtualClock(start: Date())
        let events = EventLog()
        let summary = try await engine(flaky, clock: clock).run(observe: { events.append($0) })
        #expect(summary.exitCode == 0)
        #expect(flaky.attemptCount("a.txt") == 3)
        #expect(clock.sleeps == [.seconds(1), .seconds(2)])
        #expect(events.names(for: "a.txt") == ["queued", "started", "retrying", "started", "retrying", "started", "synced"])
        // Retries are spaced by the configured backoff, as the events' timestamps show.
        let times = events.events.filter { $0.name == "started" }.map(\.time)
        #expect(times.count == 3)
        #expect(abs(times[1].timeIntervalSince(times[0]) - 1) < 0.01)
        #expect(abs(times[2].timeIntervalSince(times[1]) - 2) < 0.01)
    }

    @Test func retriesRunOutThenScheduledForALaterRun() async throws {
        defer { dir.remove() }
        try writeOutbox(["a.txt": "alpha"])
        let flaky = FlakyDestination(transientFailures: 5)
        let clock = VirtualClock(start: Date())
        let engine = try engine(flaky, retry: "{ file: 1, artwork: 1, base_delay: 1s, max_delay: 4s }", clock: clock)
        var summary = try await engine.run()
        #expect(summary.exitCode == 75)
        #expect(summary.failedRetryable == 1)
        #expect(flaky.attemptCount("a.txt") == 2)
        let entry = try await #require(try engine.ledger.entry(FileKey(source: "outbox", path: "a.txt"), destination: "car"))
        #expect(entry.status == .failed)
        #expect(entry.attempts == 2)
        #expect(entry.lastError?.contains("Busy") == true)
        #expect(entry.nextRetryAt != nil)

        // Not due yet: nothing is attempted, still 75.
        summary = try await engine.run()
        #expect(summary.exitCode == 75)
        #expect(flaky.attemptCount("a.txt") == 2)

        // Due after the interval (1 minute after the first failed run).
        clock.advance(by: 61)
        summary = try await engine.run()
        #expect(flaky.attemptCount("a.txt") == 4)
        // The destination recovers: the next due run delivers.
        flaky.transientFailures = 0
        clock.advance(by: 3600)
        summary = try await engine.run()
        #expect(summary.exitCode == 0)
        #expect(flaky.storedNames == ["a.txt"])
    }

    @Test func permanentFailureFailsAloneAndIsNotRetriedAutomatically() async throws {
        defer { dir.remove() }
        try writeOutbox(["good.txt": "ok", "bad.txt": "no"])
        let flaky = FlakyDestination(permanentMarker: "bad")
        let clock = VirtualClock(start: Date())
        let engine = try engine(flaky, clock: clock)
        var summary = try await engine.run()
        #expect(summary.exitCode == 1)
        #expect(flaky.storedNames == ["good.txt"])
        #expect(flaky.attemptCount("bad.txt") == 1)
        clock.advance(by: 86400)
        summary = try await engine.run()
        #expect(summary.exitCode == 1)
        #expect(flaky.attemptCount("bad.txt") == 1)
        let entry = try await #require(try engine.ledger.entry(FileKey(source: "outbox", path: "bad.txt"), destination: "car"))
        #expect(entry.errorClass == .permanent)
        #expect(entry.lastError == "Refused: refused bad.txt")
    }

    @Test func filesMissingFromAnAuthoritativeListingAreSentAgain() async throws {
        defer { dir.remove() }
        try writeOutbox(["a.png": "art", "b.wav": "audio"])
        let flaky = FlakyDestination(authoritative: true)
        let engine = try engine(flaky)
        _ = try await engine.run()
        flaky.forget("a.png")  // e.g. a head unit lost it at ignition off
        let summary = try await engine.run()
        #expect(summary.uploaded == 1)
        #expect(flaky.attemptCount("a.png") == 2)
        #expect(flaky.attemptCount("b.wav") == 1)
    }

    @Test func dryRunChangesNothing() async throws {
        defer { dir.remove() }
        try writeOutbox(["a.txt": "alpha"])
        let flaky = FlakyDestination()
        let engine = try engine(flaky)
        let events = EventLog()
        let summary = try await engine.run(SyncOptions(dryRun: true), observe: { events.append($0) })
        #expect(summary.planned == 1)
        #expect(flaky.storedNames.isEmpty)
        await #expect(try engine.ledger.entries().isEmpty)
        #expect(events.events.map(\.name) == ["queued"])
    }

    /// The plan walks the scan and the ledger side by side, so the scan must list files in the ledger's byte order:
    /// names that sort differently as paths than as folder entries ("a.txt" before "a/b", "a-c/x" before "a/b"),
    /// and two spellings of "é" (precomposed and decomposed, two different files on Linux).
    @Test func scanOrderIsTheLedgersOrderSoTrickyNamesAreUpToDateNextTime() async throws {
        defer { dir.remove() }
        let names = ["a/b.txt", "a.txt", "a-c/x", "ab", "a/b/c", "A", "\u{E9}.txt", "e\u{301}.txt", "z/\u{E9}/1", "z/e\u{301}/2", "a b"]
        for name in names { try dir.write("outbox/" + name, name) }  // (a Dictionary would take the two é as one key)
        let flaky = FlakyDestination()
        let engine = try engine(flaky)
        let scanned = SourceScanner().scan(engine.config.sources[0]).files
        #expect(scanned.count == names.count)
        #expect(scanned.map(\.key) == scanned.map(\.key).sorted(), "\(scanned.map(\.relativePath))")
        var summary = try await engine.run()
        #expect(summary.uploaded == names.count)
        summary = try await engine.run()
        #expect(summary.uploaded == 0)
        #expect(summary.upToDate == names.count)
    }

    /// Two sources sending the same relative path to one destination would overwrite each other there: both fail
    /// with name-clash and the rest goes on. A copy already synced before the clash appeared stays up to date.
    @Test func filesStoredUnderOneRemoteNameFailAsAClash() async throws {
        defer { dir.remove() }
        try dir.write("one/x.txt", "from one")
        try dir.write("one/only-one.txt", "1")
        try dir.write("two/y.txt", "from two")
        let flaky = FlakyDestination()
        let registry = PluginRegistry([PluginRegistration(type: "flaky", summary: "test") { _ in flaky }])
        let config = try GatewayConfig.parse(text: """
            version: 1
            state: state/ledger.sqlite
            sources: [{name: one, path: one}, {name: two, path: two}]
            destinations: [{name: car, type: flaky}]
            routes: [{match: ["**/*"], to: [car]}]
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: registry)
        let engine = SyncEngine(config: config, ledger: try Ledger(path: config.statePath))
        var summary = try await engine.run()
        #expect(summary.uploaded == 3)

        try dir.write("two/x.txt", "from two")  // now both sources hold x.txt
        try dir.write("two/z.txt", "z")
        try dir.write("one/w.txt", "w1")
        try dir.write("two/w.txt", "w2")  // a clash between two new files
        summary = try await engine.run()
        #expect(summary.uploaded == 1, "only z.txt")
        #expect(summary.failed == 3, "two/x.txt and both w.txt")
        #expect(summary.upToDate == 3)
        #expect(flaky.contents("x.txt") == Data("from one".utf8))
        #expect(flaky.contents("w.txt") == nil)
        let failed = try await engine.ledger.entries(statuses: [.failed])
        #expect(Set(failed.map { "\($0.file.source)/\($0.file.path)" }) == ["two/x.txt", "one/w.txt", "two/w.txt"])
        #expect(failed.allSatisfy { $0.errorCode == "name-clash" && ($0.lastError ?? "").contains("would all be stored as") })

        // A run with the clash still there fails the same files again, sending nothing, counting no attempt.
        summary = try await engine.run()
        #expect(summary.uploaded == 0 && summary.failed == 3)
        #expect(try await engine.ledger.entries(statuses: [.failed]).allSatisfy { $0.attempts == 0 })
        // Renamed as the error asks: the next run sends what no longer clashes, without `syncgate retry`. two/x.txt
        // is gone (its row marked removed), and one/w.txt now has its name alone.
        try FileManager.default.moveItem(at: dir.file("two/x.txt"), to: dir.file("two/x2.txt"))
        try FileManager.default.moveItem(at: dir.file("two/w.txt"), to: dir.file("two/w2.txt"))
        summary = try await engine.run()
        #expect(summary.failed == 0, "\(summary)")
        #expect(summary.uploaded == 3, "one/w.txt, two/x2.txt and two/w2.txt")
        #expect(flaky.contents("w.txt") == Data("w1".utf8))
        #expect(flaky.contents("x.txt") == Data("from one".utf8))
        #expect(try await engine.ledger.entries(statuses: [.failed]).isEmpty)
    }

    /// A destination that flattens folders into names (as a head unit does) can clash within one source; one
    /// that keeps paths apart (``Destination/remoteNamesAreDistinct``) cannot, and its names are not tracked.
    @Test func oneSourceClashesOnlyWhereNamesAreFlattened() async throws {
        defer { dir.remove() }
        try dir.write("outbox/a/b.txt", "folder")
        try dir.write("outbox/a_b.txt", "flat")
        try dir.write("outbox/c.txt", "c")
        let engine = try FlatNamesDestination.engineWithCopy(in: dir)
        let summary = try await engine.run()
        #expect(summary.uploaded == 4, "c.txt to flat, all three to copy")
        #expect(summary.failed == 2)
        let failed = try await engine.ledger.entries(destination: "flat", statuses: [.failed])
        #expect(Set(failed.map(\.file.path)) == ["a/b.txt", "a_b.txt"])
        #expect(failed.allSatisfy { $0.errorCode == "name-clash" })
        #expect(try dir.read("copy/a/b.txt") == Data("folder".utf8))
        #expect(try dir.read("copy/a_b.txt") == Data("flat".utf8))
    }

    @Test func unreadableFileFailsAloneWhileTheRestSync() async throws {
        defer { dir.remove() }
        try writeOutbox(["a.txt": "alpha", "b.txt": "beta"])
        // A folder where a file was planned: reading it fails like an unreadable file does (this works as root too).
        let flaky = FlakyDestination()
        let engine = try engine(flaky)
        let scanned = SourceScanner().scan(engine.config.sources[0]).files
        let broken = scanned.map { file -> ScannedFile in
            var f = file
            if f.relativePath == "b.txt" { f.absolutePath = dir.file("missing/b.txt").path }
            return f
        }
        let plans = try engine.plan(try #require(engine.config.destination(named: "car")), files: broken, options: SyncOptions(), remoteNames: nil)
        let b = try #require(plans.first { $0.file.relativePath == "b.txt" })
        guard case .fail(let failure) = b.action else {
            Issue.record("an unreadable file must fail")
            return
        }
        #expect(failure.message.contains("cannot open"))
        #expect(failure.failureClass.isRetryable)
        #expect(plans.first { $0.file.relativePath == "a.txt" }?.isUpload == true)
    }
}

/// Many files through a destination whose attempt marks join the ledger's batches (``Destination/resendIsHarmless``)
/// and whose flush takes a while: batches written from many tasks at once must reach the ledger in the order they
/// were taken, so that no file's "uploading" mark lands after its "synced" row. (A local run over 100,000 files
/// once left 5 rows `uploading` that way: one batch waited in the flush while a later one was written.)
@Suite("ledger batches from concurrent uploads")
struct LedgerBatchOrderTests {
    /// Stores nothing, answers at once; its flush (before every batch that records files synced) takes 40 ms
    /// every other time and no time otherwise, as a file system's flush does when a batch finds less to write.
    final class SlowFlushDestination: Destination, @unchecked Sendable {
        private let lock = NSLock()
        private var flushes = 0
        var resendIsHarmless: Bool { true }
        func upload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt {
            progress(item.size)
            return Receipt(remoteName: item.remoteName)
        }
        func delete(remoteName: String) async throws {}
        func list() async throws -> RemoteListing { RemoteListing(entries: []) }
        func makeDurable() throws {
            let slow = lock.withLock { () -> Bool in
                flushes += 1
                return flushes % 2 == 1
            }
            if slow { usleep(40_000) }
        }
    }

    @Test func everyDeliveredFileEndsSyncedInTheLedger() async throws {
        let dir = try TemporaryDirectory("sg-batches")
        defer { dir.remove() }
        let count = 3000
        for index in 0..<count { try dir.write(String(format: "outbox/d%02d/f%05d.txt", index % 30, index), "\(index)") }
        let registry = PluginRegistry([PluginRegistration(type: "slow-flush", summary: "test") { _ in SlowFlushDestination() }])
        let config = try GatewayConfig.parse(text: """
            version: 1
            state: state/ledger.sqlite
            sources: [{name: outbox, path: outbox}]
            destinations:
              - {name: copy, type: slow-flush, concurrency: 16}
            routes: [{match: ["**/*"], to: [copy]}]
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: registry)
        let ledger = try Ledger(path: config.statePath)
        let summary = try await SyncEngine(config: config, ledger: ledger).run()
        #expect(summary.uploaded == count)
        let counts = try await ledger.counts()["copy"] ?? [:]
        #expect(counts[.synced] == count, "\(counts)")
        #expect(counts[.uploading] == nil && counts[.pending] == nil, "\(counts)")
    }
}

/// The local destination hashes a new file while copying it (``Destination/hashesWhileSending``): the ledger must
/// still record the content's SHA-256, so that a file touched with the same bytes is recognised as unchanged.
@Suite("hash taken while sending")
struct HashWhileSendingTests {
    /// Every file of `outbox` to a local folder, `copy`.
    static func config(in dir: TemporaryDirectory) throws -> GatewayConfig {
        try GatewayConfig.parse(text: """
            version: 1
            state: state/ledger.sqlite
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: copy, type: local, path: copy, fsync: false}]
            routes: [{match: ["**/*"], to: [copy]}]
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: PluginRegistry([LocalDestination.registration]))
    }

    /// A new file for a destination that hashes while sending is not read at planning, but one that cannot be read
    /// fails there all the same (`access`), retryable and without an attempt, while the rest go.
    @Test func aNewFileThatCannotBeReadFailsAtPlanning() async throws {
        let dir = try TemporaryDirectory("sg-hash-while-unreadable")
        defer { dir.remove() }
        try dir.write("outbox/a.txt", "alpha")
        try dir.write("outbox/b.txt", "beta")
        let config = try Self.config(in: dir)
        let engine = SyncEngine(config: config, ledger: try Ledger(path: config.statePath))
        let scanned = SourceScanner().scan(config.sources[0]).files.map { file -> ScannedFile in
            var f = file
            if f.relativePath == "b.txt" { f.absolutePath = dir.file("missing/b.txt").path }
            return f
        }
        let plans = try engine.plan(try #require(config.destination(named: "copy")), files: scanned, options: SyncOptions(), remoteNames: nil)
        let b = try #require(plans.first { $0.file.relativePath == "b.txt" })
        guard case .fail(let failure) = b.action else {
            Issue.record("a file that cannot be read must fail at planning: \(b.action)")
            return
        }
        #expect(failure.message.contains("cannot open") && failure.message.contains("No such file"), "\(failure.message)")
        #expect(failure.failureClass.isRetryable)
        #expect(failure.attempts == 0)
        #expect(plans.first { $0.file.relativePath == "a.txt" }?.isUpload == true)
    }

    @Test func newFilesGetTheirContentHashFromTheCopy() async throws {
        let dir = try TemporaryDirectory("sg-hash-while")
        defer { dir.remove() }
        try dir.write("outbox/a.txt", "alpha")
        try dir.write("outbox/deep/b.bin", String(repeating: "b", count: 3_000_000))  // several read chunks
        let config = try Self.config(in: dir)
        let ledger = try Ledger(path: config.statePath)
        let engine = SyncEngine(config: config, ledger: ledger)
        #expect(try await engine.run().uploaded == 2)
        for path in ["a.txt", "deep/b.bin"] {
            let entry = try await #require(try ledger.entry(FileKey(source: "outbox", path: path), destination: "copy"))
            #expect(entry.sha256 == (try FileHasher.sha256(path: dir.file("outbox/" + path).path)), "\(path)")
            #expect(entry.receipt?.sha256 == entry.sha256)
        }
        // Same bytes, new time: hashed now, found equal to what the copy recorded, not sent again.
        try dir.write("outbox/a.txt", "alpha")
        let again = try await engine.run()
        #expect(again.uploaded == 0)
        #expect(again.upToDate == 2)
    }
}
