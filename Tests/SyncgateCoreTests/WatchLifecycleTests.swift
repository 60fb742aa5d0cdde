import Foundation
import Logging
import Synchronization
@testable import SyncgateCore
import SyncgateTestSupport
import Testing

/// The watcher's life: ready once its watches are set, a source's folder removed, replaced or missing, the watch
/// limit reached, and a prompt stop. Real files, real inotify.
@Suite("watch: lifecycle", .serialized)
struct WatchLifecycleTests {
    @Test func aSourceFolderRemovedBringsARescanAndIsWatchedAgainWhenBack() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        try dir.write("music/a/b.mp3", "b")
        try dir.write("other/keep.txt", "k")
        let sources = [try WatchRecorder.source(dir.file("music").path, name: "music"),
                       try WatchRecorder.source(dir.file("other").path, name: "other")]
        let recorder = try await WatchRecorder.watching(sources: sources, settle: .milliseconds(300))
        defer { recorder.stop() }

        try FileManager.default.removeItem(at: dir.file("music"))
        #expect(await recorder.wait { recorder.rescans.contains { $0.contains("source music") } }, "\(recorder.rescans)")
        #expect(recorder.watcher.isWatching)
        // The other source is still watched.
        try dir.write("other/new.txt", "n")
        #expect(await recorder.wait { recorder.reported.contains(FileKey(source: "other", path: "new.txt")) })
        // Back (made with files already inside): its files are reported, and it is watched again.
        try dir.write("music/back/c.mp3", "c")
        #expect(await recorder.wait { recorder.reported.contains(FileKey(source: "music", path: "back/c.mp3")) }, "\(recorder.reported)")
        try dir.write("music/back/d.mp3", "d")
        #expect(await recorder.wait { recorder.reported.contains(FileKey(source: "music", path: "back/d.mp3")) })
    }

    @Test func aSourceFolderReplacedByAnotherBringsARescanAndTheNewOneIsWatched() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        try dir.write("v1/a.txt", "a")
        try dir.write("v2/b.txt", "b")
        // The source is a link switched from one folder to another (a deployment's "current"): no event says so.
        let link = dir.file("current").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: dir.file("v1").path)
        let recorder = try await WatchRecorder.watching(sources: [WatchRecorder.source(link)], settle: .milliseconds(300))
        defer { recorder.stop() }

        try FileManager.default.createSymbolicLink(atPath: dir.file("next").path, withDestinationPath: dir.file("v2").path)
        #expect(rename(dir.file("next").path, link) == 0)
        #expect(await recorder.wait { recorder.rescans.contains { $0.contains("replaced") } }, "\(recorder.rescans)")
        try dir.write("v2/c.txt", "c")
        try dir.write("v1/not-any-more.txt", "x")
        #expect(await recorder.wait { recorder.count("c.txt") == 1 })
        try await Task.sleep(for: .milliseconds(600))
        #expect(recorder.paths == ["c.txt"], "\(recorder.paths)")
    }

    @Test func aMissingOptionalSourceDoesNotHoldUpReadinessAndIsReportedWhenItAppears() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        try FileManager.default.createDirectory(at: dir.file("here"), withIntermediateDirectories: true)
        let sources = [try WatchRecorder.source(dir.file("here").path, name: "here"),
                       try WatchRecorder.source(dir.file("card").path, name: "card", optional: true)]
        let recorder = try await WatchRecorder.watching(sources: sources, settle: .milliseconds(300))
        defer { recorder.stop() }
        #expect(!recorder.logged.contains { $0.contains("card") }, "an optional source's absence is not a warning")

        let outside = try TemporaryDirectory("sg-watch-outside")
        defer { outside.remove() }
        try outside.write("DCIM/1.jpg", "1")
        try outside.write("DCIM/2.jpg", "2")
        try FileManager.default.moveItem(at: outside.url, to: dir.file("card"))  // the card is inserted
        let expected: Set = [FileKey(source: "card", path: "DCIM/1.jpg"), FileKey(source: "card", path: "DCIM/2.jpg")]
        #expect(await recorder.wait { Set(recorder.reported) == expected }, "\(recorder.reported)")
        #expect(recorder.rescans.isEmpty)
    }

    @Test func theWatchLimitIsLoggedWithItsSysctlAndFallsBackToRescans() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        for name in ["a", "b", "c", "d", "e"] { try FileManager.default.createDirectory(at: dir.file(name), withIntermediateDirectories: true) }
        // Three watches at most: the source's folder and two of its five folders.
        let recorder = try await WatchRecorder.watching(sources: [WatchRecorder.source(dir.path)], settle: .milliseconds(200),
                                                         watchLimit: 3, limitRetry: .seconds(1))
        defer { recorder.stop() }

        #expect(await recorder.wait { recorder.rescans.contains { $0.contains("watch limit") } }, "\(recorder.rescans)")
        let logged = recorder.logged.joined(separator: "\n")
        #expect(logged.contains("sysctl fs.inotify.max_user_watches="), "\(logged)")
        // Still short after the retry: another rescan.
        #expect(await recorder.wait { recorder.rescans.count >= 2 }, "\(recorder.rescans)")
        // What is watched is still reported.
        try dir.write("top.txt", "t")
        #expect(await recorder.wait { recorder.count("top.txt") == 1 })
        // Below the limit again (folders removed): every folder is watched and the rescans stop.
        for name in ["c", "d", "e"] { try FileManager.default.removeItem(at: dir.file(name)) }
        #expect(await recorder.wait { recorder.rescans.contains { $0.contains("every folder is watched again") } }, "\(recorder.rescans)")
        let rescans = recorder.rescans.count
        try await Task.sleep(for: .milliseconds(2500))
        #expect(recorder.rescans.count == rescans)
        try dir.write("a/x.txt", "x")
        try dir.write("b/y.txt", "y")
        #expect(await recorder.wait { recorder.count("a/x.txt") == 1 && recorder.count("b/y.txt") == 1 })
    }

    @Test func aSourceFolderRenamedAwayBringsARescanAndIsReportedWhenRenamedBack() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        try dir.write("inbox/a.txt", "a")
        let recorder = try await WatchRecorder.watching(dir.file("inbox").path, settle: .milliseconds(300))
        defer { recorder.stop() }

        try FileManager.default.moveItem(at: dir.file("inbox"), to: dir.file("inbox.old"))
        #expect(await recorder.wait { recorder.rescans.contains { $0.contains("was moved or renamed") } }, "\(recorder.rescans)")
        try dir.write("inbox.old/b.txt", "not in the source any more")
        try await Task.sleep(for: .milliseconds(600))
        #expect(recorder.paths.isEmpty, "\(recorder.paths)")
        // Back under its name: what it holds is reported (the gateway cannot know what changed meanwhile).
        try FileManager.default.moveItem(at: dir.file("inbox.old"), to: dir.file("inbox"))
        #expect(await recorder.wait { Set(recorder.paths) == ["a.txt", "b.txt"] }, "\(recorder.paths)")
    }

    @Test func theConsumerGivingUpStopsTheWatcher() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        let watcher = try SourceWatcher(sources: [WatchRecorder.source(dir.path)], settle: .zero,
                                        logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        defer { watcher.stop() }
        let received = Mutex<[WatchEvent]>([])
        let consumer = Task {
            for await event in watcher.events { received.withLock { $0.append(event) } }
        }
        #expect(await WatchRecorder.wait { watcher.isWatching })
        try dir.write("one.txt", "1")
        // (At settle 0 it may come twice: once written, once closed.)
        #expect(await WatchRecorder.wait { received.withLock { $0 }.contains(.files([FileKey(source: "src", path: "one.txt")])) },
                "\(received.withLock { $0 })")
        consumer.cancel()
        await consumer.value
        #expect(await WatchRecorder.wait(within: .seconds(10)) { !watcher.isWatching }, "still watching after its consumer left")
    }

    @Test func stopEndsTheWatcherPromptlyWithFilesStillSettling() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        let recorder = try WatchRecorder(sources: [WatchRecorder.source(dir.path)], settle: .seconds(60))
        await recorder.waitUntilWatching()
        for index in 0..<100 { try dir.write("f\(index)", "x") }
        #expect(await recorder.wait { recorder.watcher.queueDepth == 100 })

        let started = ContinuousClock.now
        recorder.stop()
        let took = ContinuousClock.now - started
        #expect(took < .seconds(10), "stop took \(took)")
        #expect(!recorder.watcher.isWatching)
        #expect(await recorder.wait(within: .seconds(10)) { recorder.hasEnded }, "the events did not end")
        #expect(recorder.paths.isEmpty)
        recorder.stop()  // again: nothing happens
    }

    #if os(Linux)
    /// A stop after the watcher's thread has closed its inotify instance (a second stop, a stop racing the end of
    /// the events) must not write to the wake pipe's descriptor: its number may by then belong to another file or
    /// socket (a CI run saw `\u{01}GET` arrive at an HTTP server that way).
    @Test func wakingAClosedInstanceWritesNothing() throws {
        let watch = try InotifyWatch()
        #expect(watch.wake())
        watch.close()
        #expect(!watch.wake())
        watch.close()  // again: nothing happens
    }
    #endif
}
