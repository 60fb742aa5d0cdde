import Foundation
import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport
import Testing

/// `after_sync: delete` (move), `delete_remote` with `max_delete` (mirror), and the rows of files gone from their
/// source: the real engine, a real local folder destination and one that fails on command.
@Suite("move and mirror")
struct MoveAndMirrorTests {
    let dir: TemporaryDirectory
    let flaky = FlakyDestination()
    let clock = VirtualClock(start: Date())

    init() throws { dir = try TemporaryDirectory("sg-move") }

    /// Sources `outbox` (keys `outboxKeys`) and `inbox`; destinations `archive` (a local folder, `archiveKeys`) and
    /// `car` (the flaky one); `routes` as given.
    func engine(outboxKeys: String = "", inboxKeys: String = "", archiveKeys: String = "", carKeys: String = "",
                routes: String = "routes: [{match: [\"**/*\"], to: [archive, car]}]") throws -> SyncEngine {
        let flaky = self.flaky
        let registry = PluginRegistry([LocalDestination.registration, PluginRegistration(type: "flaky", summary: "test") { setup in
            _ = try setup.decode(Empty.self)
            return flaky
        }])
        let config = try GatewayConfig.parse(text: """
            version: 1
            state: state/ledger.sqlite
            sources:
              - {name: outbox, path: outbox\(outboxKeys)}
              - {name: inbox, path: inbox, optional: true\(inboxKeys)}
            destinations:
              - {name: archive, type: local, path: archive, recent: {completed: 60s}\(archiveKeys)}
              - {name: car, type: flaky, retry: {file: 0, artwork: 0}, recent: {completed: 60s}\(carKeys)}
            \(routes)
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: registry)
        return SyncEngine(config: config, ledger: try Ledger(path: config.statePath), clock: clock)
    }

    struct Empty: Decodable {}

    func write(_ files: [String: String], in source: String = "outbox") throws {
        for (path, text) in files { try dir.write("\(source)/\(path)", text) }
    }

    func rows(_ engine: SyncEngine) async throws -> [String: LedgerEntry] {
        // Rows of the outbox by "destination:path" (another source's rows under "destination:source/path").
        await Dictionary(uniqueKeysWithValues: try engine.ledger.entries().map {
            ("\($0.destination):\($0.file.source == "outbox" ? "" : $0.file.source + "/")\($0.file.path)", $0)
        })
    }

    // MARK: - Move

    @Test func aFileIsDeletedOnlyOnceEveryDestinationHoldsIt() async throws {
        defer { dir.remove() }
        try write(["a.txt": "alpha", "b/c.txt": "gamma", "d.txt": "delta"])
        flaky.permanentMarker = "d.txt"
        let engine = try engine(outboxKeys: ", after_sync: delete")
        let summary = try await engine.run()
        // a and c are at both destinations: deleted; d failed at the car: kept, though the archive holds it.
        #expect(summary.moved == 2)
        #expect(!dir.exists("outbox/a.txt") && !dir.exists("outbox/b/c.txt"))
        #expect(try dir.read("outbox/d.txt") == Data("delta".utf8))
        #expect(try dir.read("archive/a.txt") == Data("alpha".utf8) && flaky.contents("a.txt") == Data("alpha".utf8))
        #expect(summary.exitCode == 1, "d.txt failed permanently")
        let rows = try await rows(engine)
        #expect(rows["archive:a.txt"]?.removed == .moved && rows["car:b/c.txt"]?.removed == .moved)
        #expect(rows["archive:d.txt"]?.removed == nil)
        // Moved rows are not counted, and are dropped `recent.completed` (60 s) later.
        let counts = try await engine.ledger.counts()
        #expect(counts["archive"]?[.synced] == 1)
        clock.advance(by: 61)
        flaky.permanentMarker = nil
        _ = try await engine.ledger.requestRetry(destination: nil, paths: [], at: clock.now())
        let second = try await engine.run()
        #expect(second.moved == 1 && !dir.exists("outbox/d.txt"))
        await #expect(try engine.ledger.entries().filter { $0.file.path != "d.txt" }.isEmpty, "rows moved over 60 s ago are dropped")
    }

    /// A moved file put back unchanged is unmarked and, as every destination holds it, deleted again without being
    /// sent; one put back changed is sent, then deleted. (So is a file whose move a crash cut between its durable
    /// mark and its unlink: the next run finishes the move.)
    @Test func aMovedFilePutBackIsMovedAgain() async throws {
        defer { dir.remove() }
        try write(["a.txt": "alpha"])
        let engine = try engine(outboxKeys: ", after_sync: delete")
        #expect(try await engine.run().moved == 1)
        let path = dir.file("outbox/a.txt").path
        let row = try await #require(try rows(engine)["archive:a.txt"])
        try write(["a.txt": "alpha"])
        try FileManager.default.setAttributes([.modificationDate: row.modificationTime], ofItemAtPath: path)
        var summary = try await engine.run()
        #expect(summary.moved == 1 && summary.uploaded == 0 && !dir.exists("outbox/a.txt"))
        try write(["a.txt": "alpha, changed"])
        summary = try await engine.run()
        #expect(summary.uploaded == 2 && summary.moved == 1 && !dir.exists("outbox/a.txt"))
        #expect(flaky.contents("a.txt") == Data("alpha, changed".utf8))
    }

    @Test func aFileChangedSinceItWasSentIsNotDeleted() async throws {
        defer { dir.remove() }
        try write(["a.txt": "alpha", "b.txt": "bravo"])
        _ = try await engine().run()
        // Rewritten with other bytes of the same size, its modification time put back: the stat says unchanged, so
        // it is not sent again, and a move must not delete it (its content is checked).
        let path = dir.file("outbox/a.txt").path
        let before = try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as! Date
        try write(["a.txt": "ALPHA"])
        try FileManager.default.setAttributes([.modificationDate: before], ofItemAtPath: path)
        let summary = try await engine(outboxKeys: ", after_sync: delete").run()
        #expect(summary.moved == 1)
        #expect(try dir.read("outbox/a.txt") == Data("ALPHA".utf8))
        #expect(!dir.exists("outbox/b.txt"))
        await #expect(try rows(engine())["archive:a.txt"]?.removed == nil)
    }

    @Test func keepOnAnyRouteOfAFileWins() async throws {
        defer { dir.remove() }
        try write(["logs/x.log": "log", "art/y.png": "png"])
        try write(["z.txt": "zulu"], in: "inbox")
        let engine = try engine(inboxKeys: ", after_sync: delete", routes: """
            routes:
              - {match: ["**/*.log"], to: [archive], after_sync: delete}
              - {match: ["**/*.png"], to: [archive]}
              - {match: ["**/*.png"], to: [car], after_sync: delete}
              - {sources: [inbox], to: [car], after_sync: keep}
            """)
        let summary = try await engine.run()
        #expect(summary.uploaded == 4)
        #expect(!dir.exists("outbox/logs/x.log"), "its only route says delete")
        #expect(dir.exists("outbox/art/y.png"), "one of its routes keeps it (its source's default)")
        #expect(dir.exists("inbox/z.txt"), "its route says keep, over its source's delete")
        #expect(summary.moved == 1)
    }

    // MARK: - Removed from the source

    @Test func rowsOfRemovedFilesAreMarkedNotCountedAndDropped() async throws {
        defer { dir.remove() }
        try write(["a.txt": "alpha", "b.txt": "bravo", "skip/c.txt": "charlie"])
        var engine = try engine()
        _ = try await engine.run()
        try FileManager.default.removeItem(at: dir.file("outbox/a.txt"))
        // Excluded now, but still there: not removed.
        engine = try self.engine(outboxKeys: ", exclude: [\"skip/**\"]")
        let summary = try await engine.run()
        #expect(summary.removedFromSources == 1)
        var rows = try await rows(engine)
        #expect(rows["archive:a.txt"]?.removed == .source && rows["car:a.txt"]?.removed == .source)
        #expect(rows["archive:skip/c.txt"]?.removed == nil)
        await #expect(try engine.ledger.counts()["archive"]?[.synced] == 2)
        let report = try await StatusReport.build(config: engine.config, ledger: engine.ledger, destination: nil, failedOnly: false, now: clock.now())
        #expect(report.destinations.first { $0.name == "archive" }?.removed == 1)
        #expect(report.destinations.first { $0.name == "archive" }?.synced == 2)
        // Copies stay where delete_remote is off.
        #expect(dir.exists("archive/a.txt") && flaky.contents("a.txt") != nil)
        // Back before the rows were dropped: unmarked, not sent again.
        try write(["a.txt": "alpha"])
        let path = dir.file("outbox/a.txt").path
        try FileManager.default.setAttributes([.modificationDate: rows["archive:a.txt"]!.modificationTime], ofItemAtPath: path)
        _ = try await engine.run()
        rows = try await self.rows(engine)
        #expect(rows["archive:a.txt"]?.removed == nil && rows["archive:a.txt"]?.status == .synced)
        #expect(flaky.attemptCount("a.txt") == 1)
        // Gone again, and `recent.completed` later: dropped.
        try FileManager.default.removeItem(at: dir.file("outbox/a.txt"))
        _ = try await engine.run()
        clock.advance(by: 61)
        _ = try await engine.run()
        let remaining = try await self.rows(engine)
        #expect(remaining["archive:a.txt"] == nil && remaining["car:a.txt"] == nil)
    }

    @Test func aMissingSourceFolderRemovesNothing() async throws {
        defer { dir.remove() }
        try write(["a.txt": "alpha"], in: "inbox")
        let engine = try engine()
        _ = try await engine.run()
        try FileManager.default.removeItem(at: dir.file("inbox"))
        let summary = try await engine.run()
        #expect(summary.removedFromSources == 0)
        await #expect(try rows(engine)["archive:a.txt"]?.removed == nil)
    }

    // MARK: - Mirror

    @Test func deleteRemoteDeletesTheCopyAndAFileThatComesBackIsSentAgain() async throws {
        defer { dir.remove() }
        try write(["a.txt": "alpha", "deep/er/b.txt": "bravo", "c.txt": "charlie"])
        // Two of three files go: more than the default max_delete_fraction, which is not what this test is about.
        let engine = try engine(outboxKeys: ", max_delete_fraction: 1", archiveKeys: ", delete_remote: true", carKeys: ", delete_remote: true")
        _ = try await engine.run()
        try FileManager.default.removeItem(at: dir.file("outbox/deep"))
        try FileManager.default.removeItem(at: dir.file("outbox/a.txt"))
        let summary = try await engine.run()
        #expect(summary.exitCode == 0)
        #expect(summary.remoteDeleted == 4)
        #expect(!dir.exists("archive/a.txt") && !dir.exists("archive/deep"), "the file and the folders it leaves empty")
        #expect(dir.exists("archive/c.txt"))
        #expect(flaky.storedNames == ["c.txt"])
        await #expect(try rows(engine)["archive:a.txt"]?.removed == .remoteDeleted)
        // It comes back (same bytes, same time): its copy was deleted, so it is sent again.
        try write(["a.txt": "alpha"])
        let again = try await engine.run()
        #expect(again.uploaded == 2)
        #expect(try dir.read("archive/a.txt") == Data("alpha".utf8) && flaky.contents("a.txt") == Data("alpha".utf8))
        await #expect(try rows(engine)["archive:a.txt"]?.removed == nil)
    }

    /// A mirror's delete goes through the delivery layer's retry loop: one refused for good (403) is not retried,
    /// leaves that copy and its row (reported, exit 75, tried again by a later run), and deletes nothing else.
    @Test func aMirrorDeleteRefusedForGoodLeavesTheCopyAndDeletesNothingElse() async throws {
        defer { dir.remove() }
        try write(["a.txt": "alpha", "b.txt": "bravo", "c.txt": "charlie", "d.txt": "delta"])
        let engine = try engine(outboxKeys: ", max_delete_fraction: 1", carKeys: ", delete_remote: true")
        _ = try await engine.run()
        flaky.refusedDeletes = ["b.txt"]
        try FileManager.default.removeItem(at: dir.file("outbox/a.txt"))
        try FileManager.default.removeItem(at: dir.file("outbox/b.txt"))
        let summary = try await engine.run()
        #expect(summary.remoteDeleted == 1)
        #expect(summary.remoteDeleteFailed == 1)
        #expect(summary.exitCode == ExitStatus.retryScheduled)
        #expect(flaky.storedNames == ["b.txt", "c.txt", "d.txt"])
        #expect(flaky.deletes.sorted() == ["a.txt", "b.txt"], "each asked once; nothing else")
        await #expect(try rows(engine)["car:a.txt"]?.removed == .remoteDeleted)
        await #expect(try rows(engine)["car:b.txt"]?.removed == .source, "still to be deleted")
        // Allowed again: a later run deletes it.
        flaky.refusedDeletes = []
        let later = try await engine.run()
        #expect(later.remoteDeleted == 1 && later.exitCode == 0)
        #expect(flaky.storedNames == ["c.txt", "d.txt"])
    }

    @Test func maxDeleteStopsEveryDeletionAtThatDestination() async throws {
        defer { dir.remove() }
        var files: [String: String] = [:]
        for i in 0..<5 { files["f\(i).txt"] = "file \(i)" }
        try write(files)
        var engine = try engine(outboxKeys: ", max_delete_fraction: 1", archiveKeys: ", delete_remote: true, max_delete: 3", carKeys: ", delete_remote: true")
        _ = try await engine.run()
        for i in 0..<4 { try FileManager.default.removeItem(at: dir.file("outbox/f\(i).txt")) }
        let summary = try await engine.run()
        #expect(summary.exitCode == 1)
        #expect(summary.deleteLimits.map { "\($0.destination) \($0.wanted) \($0.limit)" } == ["archive 4 3"])
        for i in 0..<5 { #expect(dir.exists("archive/f\(i).txt"), "nothing deleted at the archive") }
        #expect(flaky.storedNames == ["f4.txt"], "the car's own max_delete (100) allows 4")
        // The rows wait, past `recent.completed`, until the deletions are allowed.
        clock.advance(by: 120)
        #expect(try await engine.run().exitCode == 1)
        var options = SyncOptions()
        options.maxDelete = 4
        let allowed = try await engine.run(options)
        #expect(allowed.exitCode == 0 && allowed.remoteDeleted == 4)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("archive").path) == ["f4.txt"])
        // Another run: nothing left to delete.
        engine = try self.engine(outboxKeys: ", max_delete_fraction: 1", archiveKeys: ", delete_remote: true, max_delete: 0")
        #expect(try await engine.run().exitCode == 0)
    }

    @Test func aCopyWhoseNameAnotherFileNowUsesIsKept() async throws {
        defer { dir.remove() }
        // other.txt stays: an outbox found empty would be held back (SourceJudge), which is not what this test is about.
        try write(["same.txt": "from outbox", "other.txt": "stays"])
        let engine = try engine(archiveKeys: ", delete_remote: true", routes: "routes: [{match: [\"**/*\"], to: [archive]}]")
        _ = try await engine.run()
        try FileManager.default.removeItem(at: dir.file("outbox/same.txt"))
        try write(["same.txt": "from inbox"], in: "inbox")
        let summary = try await engine.run()
        #expect(summary.remoteDeleted == 0)
        #expect(try dir.read("archive/same.txt") == Data("from inbox".utf8))
        let rows = try await rows(engine)
        #expect(rows["archive:same.txt"]?.removed == .remoteKept)
        #expect(rows["archive:inbox/same.txt"]?.status == .synced)
    }

    @Test func deleteRemoteOnADestinationThatCannotDeleteIsAConfigError() throws {
        var registration = PluginRegistration(type: "appendonly", summary: "test") { _ in FlakyDestination() }
        registration.deletes = false
        let registry = PluginRegistry([registration])
        #expect {
            _ = try GatewayConfig.parse(text: """
                version: 1
                sources: [{name: outbox, path: outbox, after_sync: remove}]
                destinations:
                  - {name: rows, type: appendonly, delete_remote: true}
                """, file: "plugins.yaml", baseDirectory: URL(fileURLWithPath: "/cfg"), registry: registry)
        } throws: { error in
            let text = (error as? ConfigError)?.all.map(\.description).joined(separator: "\n") ?? "\(error)"
            return text.contains("plugins.yaml:2:") && text.contains("plugins.yaml:4:") && text.contains("after_sync: 'remove' is not an after_sync mode (keep, delete)")
                && text.contains("destinations[0].delete_remote: a appendonly destination cannot delete what it holds")
        }
    }
}
