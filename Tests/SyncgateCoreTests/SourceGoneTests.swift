import Foundation
@testable import SyncgateCore
import SyncgateTestSupport
import Testing

/// A file removed from its source between the walk that planned it and its upload is not a failure: its row is left
/// pending (no attempt counted) for the next walk, which marks it removed after judging the source. Whatever else
/// makes a file unreadable still fails it, and a source folder that is gone itself is no reason either.
@Suite("files removed from their source before they were sent")
struct SourceGoneTests {
    let dir: TemporaryDirectory

    init() throws { dir = try TemporaryDirectory("sg-source-gone") }

    struct Empty: Decodable {}

    /// The engine over `outbox`, sending every file to `car` (and to `dash` when given).
    func engine(_ car: FlakyDestination, dash: FlakyDestination? = nil, carKeys: String = "") throws -> (SyncEngine, Ledger) {
        let registry = PluginRegistry([PluginRegistration(type: "flaky", summary: "test") { setup in
            _ = try setup.decode(Empty.self)
            return setup.name == "car" ? car : (dash ?? car)
        }])
        let config = try GatewayConfig.parse(text: """
            version: 1
            state: state/ledger.sqlite
            sources: [{name: outbox, path: outbox}]
            destinations:
              - {name: car, type: flaky, retry: {file: 2, artwork: 2, base_delay: 1ms, max_delay: 2ms}\(carKeys)}
            \(dash == nil ? "" : "  - {name: dash, type: flaky, retry: {file: 2, artwork: 2, base_delay: 1ms, max_delay: 2ms}}")
            routes: [{match: ["**/*"], to: [\(dash == nil ? "car" : "car, dash")]}]
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: registry)
        let ledger = try Ledger(path: config.statePath)
        return (SyncEngine(config: config, ledger: ledger), ledger)
    }

    @Test func aFileRemovedBeforeItsUploadIsGoneNotFailed() async throws {
        defer { dir.remove() }
        for name in ["a.txt", "b-gone.txt", "c.txt"] { try dir.write("outbox/" + name, name) }
        let car = FlakyDestination()
        car.beforeRead = { item in
            if item.relativePath.contains("gone") { try? FileManager.default.removeItem(atPath: item.absolutePath) }
        }
        let (engine, ledger) = try engine(car)
        let summary = try await engine.run()
        #expect(summary.uploaded == 2)
        #expect(summary.failed == 0, "a file the user removed is no failure")
        #expect(summary.goneBeforeSent == 1)
        #expect(summary.removedFromSources == 0, "marked by a walk only")
        #expect(summary.exitCode == 0)
        #expect(car.attemptCount("b-gone.txt") == 1, "not retried: it is not there")
        let row = try #require(try await ledger.entry(FileKey(source: "outbox", path: "b-gone.txt"), destination: "car"))
        #expect(row.status == .pending && row.attempts == 0 && row.errorClass == nil, "\(row)")
        #expect(row.lastError?.contains("removed from its source before it was sent") == true, "\(row)")
        #expect(row.removed == nil)

        // The next run's walk marks it removed, and sends nothing.
        let again = try await engine.run()
        #expect(again.uploaded == 0 && again.failed == 0 && again.removedFromSources == 1 && again.goneBeforeSent == 0 && again.exitCode == 0)
        #expect(car.attemptCount("b-gone.txt") == 1)
        let marked = try #require(try await ledger.entry(FileKey(source: "outbox", path: "b-gone.txt"), destination: "car"))
        #expect(marked.removed == .source)
        #expect(marked.lastError == nil && marked.errorCode == nil, "the note has served: \(marked)")

        // Put back, it goes.
        try dir.write("outbox/b-gone.txt", "back")
        car.beforeRead = nil
        let back = try await engine.run()
        #expect(back.uploaded == 1 && back.exitCode == 0)
        #expect(car.contents("b-gone.txt") == Data("back".utf8))
        #expect(try await ledger.entry(FileKey(source: "outbox", path: "b-gone.txt"), destination: "car")?.removed == nil)
    }

    @Test func aFileGoneForTwoDestinationsIsCountedOnce() async throws {
        defer { dir.remove() }
        try dir.write("outbox/x.txt", "x")
        try dir.write("outbox/y.txt", "y")
        let car = FlakyDestination(), dash = FlakyDestination()
        car.beforeRead = { item in
            if item.relativePath == "x.txt" { try? FileManager.default.removeItem(atPath: item.absolutePath) }
        }
        dash.beforeRead = car.beforeRead
        let (engine, ledger) = try engine(car, dash: dash)
        let summary = try await engine.run()
        #expect(summary.goneBeforeSent == 1)
        #expect(summary.failed == 0 && summary.exitCode == 0)
        for destination in ["car", "dash"] {
            let row = try await ledger.entry(FileKey(source: "outbox", path: "x.txt"), destination: destination)
            #expect(row?.status == .pending && row?.attempts == 0, "\(destination): \(String(describing: row))")
        }
    }

    /// Holding back, with a mirror: a file delivered, changed, then removed before its new version went. Its old copy
    /// is not deleted by the run that found it gone (no walk judged the source then); the next run's walk marks it
    /// removed and the mirror deletes the copy.
    @Test func aMirrorDeletesTheCopyOfAFileGoneBeforeItWasSentOnlyAfterAWalk() async throws {
        defer { dir.remove() }
        for name in ["a.txt", "b.txt", "c.txt"] { try dir.write("outbox/" + name, name) }
        let car = FlakyDestination()
        let (engine, ledger) = try engine(car, carKeys: ", delete_remote: true")
        #expect(try await engine.run().uploaded == 3)
        try dir.write("outbox/b.txt", "b, second version")
        car.beforeRead = { item in
            if item.relativePath == "b.txt" { try? FileManager.default.removeItem(atPath: item.absolutePath) }
        }
        let summary = try await engine.run()
        #expect(summary.goneBeforeSent == 1 && summary.failed == 0 && summary.remoteDeleted == 0)
        #expect(car.deletes.isEmpty, "deleted in the run that found it gone: \(car.deletes)")
        #expect(car.contents("b.txt") == Data("b.txt".utf8), "the old copy stays until a walk has judged the source")
        let next = try await engine.run()
        #expect(next.removedFromSources == 1 && next.remoteDeleted == 1 && next.exitCode == 0)
        #expect(car.deletes == ["b.txt"])
        #expect(try await ledger.entry(FileKey(source: "outbox", path: "b.txt"), destination: "car")?.removed == .remoteDeleted)
    }

    /// Holding back: the source's folder renamed away says nothing about its files: the uploads fail as before.
    @Test func aSourceFolderGoneMarksNothing() async throws {
        defer { dir.remove() }
        try dir.write("outbox/a.txt", "a")
        let outbox = dir.file("outbox").path, elsewhere = dir.file("elsewhere").path
        let car = FlakyDestination()
        car.beforeRead = { _ in try? FileManager.default.moveItem(atPath: outbox, toPath: elsewhere) }
        let (engine, ledger) = try engine(car)
        let summary = try await engine.run()
        #expect(summary.goneBeforeSent == 0)
        #expect(summary.failed == 1 && summary.exitCode != 0)
        let row = try #require(try await ledger.entry(FileKey(source: "outbox", path: "a.txt"), destination: "car"))
        #expect(row.removed == nil && row.status == .failed, "\(row)")
    }

    /// Holding back: a file that is there but unreadable is the file's failure, as before.
    @Test func anUnreadableFileStillFails() async throws {
        defer { dir.remove() }
        try dir.write("outbox/locked.txt", "secret")
        let car = FlakyDestination()
        car.beforeRead = { item in
            // A folder where the file was: it is there, and no file can be read from it.
            try? FileManager.default.removeItem(atPath: item.absolutePath)
            try? FileManager.default.createDirectory(atPath: item.absolutePath, withIntermediateDirectories: false)
        }
        let (engine, ledger) = try engine(car)
        let summary = try await engine.run()
        #expect(summary.goneBeforeSent == 0)
        #expect(summary.failed == 1)
        #expect(try await ledger.entry(FileKey(source: "outbox", path: "locked.txt"), destination: "car")?.status == .failed)
    }
}
