import Foundation
@testable import SyncgateCore
import SyncgateTestSupport
import Testing

/// Folders come and go under a watched source: created with files already inside, moved in whole, made many levels
/// at once, renamed. Their files are reported and the folders watched from then on. Real files, real inotify.
@Suite("watch: folders", .serialized)
struct WatchTreeTests {
    @Test func aFolderCreatedWithFilesInsideIsWatchedAndItsFilesReported() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        let recorder = try await WatchRecorder.watching(dir.path, settle: .milliseconds(300))
        defer { recorder.stop() }

        // Written at once after the mkdir: some land before the new folder's watch is set.
        let names = (0..<50).map { String(format: "new/f%02d.txt", $0) }
        for name in names { try dir.write(name, name) }
        #expect(await recorder.wait { Set(recorder.paths).count == names.count }, "\(recorder.paths.count) of \(names.count)")
        // The folder is watched: a later file is reported too.
        try dir.write("new/later.txt", "later")
        #expect(await recorder.wait { recorder.count("new/later.txt") == 1 })
        #expect(recorder.paths.sorted() == (names + ["new/later.txt"]).sorted())
        #expect(recorder.rescans.isEmpty)
    }

    @Test func aFolderTreeMovedInFromOutsideHasAllItsFilesReported() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        let outside = try TemporaryDirectory("sg-watch-outside")
        defer { outside.remove() }
        let recorder = try await WatchRecorder.watching(dir.path, settle: .milliseconds(300))
        defer { recorder.stop() }

        let names = ["a.mp3", "disc1/b.mp3", "disc1/c.mp3", "disc2/art/d.jpg", "disc2/e.mp3"]
        for name in names { try outside.write("album/" + name, name) }
        try FileManager.default.moveItem(at: outside.file("album"), to: dir.file("album"))
        let expected = names.map { "album/" + $0 }
        #expect(await recorder.wait { Set(recorder.paths) == Set(expected) }, "\(recorder.paths)")

        // Every folder of it is watched now.
        try dir.write("album/disc2/art/f.jpg", "f")
        try dir.write("album/disc1/g.mp3", "g")
        #expect(await recorder.wait { recorder.count("album/disc2/art/f.jpg") == 1 && recorder.count("album/disc1/g.mp3") == 1 })
        #expect(recorder.paths.sorted() == (expected + ["album/disc1/g.mp3", "album/disc2/art/f.jpg"]).sorted())
    }

    @Test func aNestedTreeMadeAtOnceThenFilledIsReported() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        let recorder = try await WatchRecorder.watching(dir.path, settle: .milliseconds(300))
        defer { recorder.stop() }

        // `mkdir -p`: the levels below the first exist before their parent's watch is set.
        try FileManager.default.createDirectory(at: dir.file("l1/l2/l3/l4/l5"), withIntermediateDirectories: true)
        let names = ["l1/a", "l1/l2/b", "l1/l2/l3/c", "l1/l2/l3/l4/d", "l1/l2/l3/l4/l5/e"]
        for name in names { try dir.write(name, name) }
        #expect(await recorder.wait { Set(recorder.paths) == Set(names) }, "\(recorder.paths)")
        // Again later, when every level surely has its watch.
        try await Task.sleep(for: .milliseconds(500))
        try dir.write("l1/l2/l3/l4/l5/f", "f")
        #expect(await recorder.wait { recorder.count("l1/l2/l3/l4/l5/f") == 1 })
    }

    @Test func aFolderRenamedInsideTheSourceIsReportedAndWatchedUnderItsNewName() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        try dir.write("old/x.txt", "x")
        try dir.write("old/sub/y.txt", "y")
        let recorder = try await WatchRecorder.watching(dir.path, settle: .milliseconds(300))
        defer { recorder.stop() }

        try FileManager.default.moveItem(at: dir.file("old"), to: dir.file("new"))
        #expect(await recorder.wait { Set(recorder.paths) == ["new/x.txt", "new/sub/y.txt"] }, "\(recorder.paths)")
        try dir.write("new/sub/z.txt", "z")
        #expect(await recorder.wait { recorder.count("new/sub/z.txt") == 1 })
        try await Task.sleep(for: .milliseconds(600))
        #expect(!recorder.paths.contains { $0.hasPrefix("old/") }, "\(recorder.paths)")
        #expect(recorder.rescans.isEmpty)
        // Renamed away out of the source: its files are not reported again, and nothing is asked of the gateway.
        let outside = try TemporaryDirectory("sg-watch-outside")
        defer { outside.remove() }
        try FileManager.default.moveItem(at: dir.file("new"), to: outside.file("gone"))
        try outside.write("gone/sub/w.txt", "w")
        try dir.write("after.txt", "after")
        #expect(await recorder.wait { recorder.count("after.txt") == 1 })
        #expect(!recorder.paths.contains { $0.hasSuffix("w.txt") })
        #expect(recorder.rescans.isEmpty)
    }

    /// Two sources over the same folders (one inside the other): one watch a folder, its files reported under
    /// both.
    @Test func overlappingSourcesReportAFileUnderEach() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        try FileManager.default.createDirectory(at: dir.file("all/photos"), withIntermediateDirectories: true)
        let sources = [try WatchRecorder.source(dir.file("all").path, name: "all"),
                       try WatchRecorder.source(dir.file("all/photos").path, name: "photos")]
        let recorder = try await WatchRecorder.watching(sources: sources, settle: .milliseconds(300))
        defer { recorder.stop() }

        try dir.write("all/photos/2024/p.jpg", "p")
        try dir.write("all/top.txt", "t")
        let expected = [FileKey(source: "all", path: "photos/2024/p.jpg"), FileKey(source: "all", path: "top.txt"),
                        FileKey(source: "photos", path: "2024/p.jpg")]
        #expect(await recorder.wait { recorder.reported.count >= 3 })
        try await Task.sleep(for: .milliseconds(600))
        #expect(recorder.reported.sorted() == expected, "\(recorder.reported)")
    }

    @Test func linksAreFollowedOnlyWhenAskedAndNeverInALoop() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        let outside = try TemporaryDirectory("sg-watch-outside")
        defer { outside.remove() }
        try outside.write("shared/one.txt", "1")
        try FileManager.default.createDirectory(at: dir.file("plain"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: dir.file("follow"), withIntermediateDirectories: true)
        let plain = try WatchRecorder.source(dir.file("plain").path, name: "plain")
        let follow = try WatchRecorder.source(dir.file("follow").path, name: "follow", followSymlinks: true)
        let recorder = try await WatchRecorder.watching(sources: [plain, follow], settle: .milliseconds(300))
        defer { recorder.stop() }

        for name in ["plain", "follow"] {
            try FileManager.default.createSymbolicLink(atPath: dir.file("\(name)/shared").path, withDestinationPath: outside.file("shared").path)
            // A link back up: followed once would loop.
            try FileManager.default.createSymbolicLink(atPath: dir.file("\(name)/loop").path, withDestinationPath: dir.file(name).path)
        }
        #expect(await recorder.wait { recorder.reported.contains(FileKey(source: "follow", path: "shared/one.txt")) }, "\(recorder.reported)")
        // The followed folder is watched.
        try outside.write("shared/two.txt", "2")
        #expect(await recorder.wait { recorder.reported.contains(FileKey(source: "follow", path: "shared/two.txt")) })
        try await Task.sleep(for: .milliseconds(600))
        #expect(recorder.reported.sorted() == [FileKey(source: "follow", path: "shared/one.txt"), FileKey(source: "follow", path: "shared/two.txt")],
                "\(recorder.reported)")
        let logged = recorder.logged.joined(separator: "\n")
        #expect(logged.contains("follow: loop: skipped: folder link loop"), "\(logged)")
    }

    /// Links that lead to the same folders over and over (a DAG of 22 levels of two links each, 4 million paths, no
    /// loop) are watched up to the source's `max_entries` entries (1,000 here), with a warning, instead of being
    /// listed for minutes; the watches that were set work.
    @Test func aDAGOfLinksIsWatchedUpToTheBound() async throws {
        let dir = try TemporaryDirectory("sg-watch-dag")
        defer { dir.remove() }
        let levels = 22
        for level in 0..<levels {
            try dir.write("dag/l\(level)/f.txt", "level \(level)")
            if level < levels - 1 {
                for link in ["x", "y"] {
                    try FileManager.default.createSymbolicLink(atPath: dir.file("dag/l\(level)/\(link)").path, withDestinationPath: "../l\(level + 1)")
                }
            }
        }
        var source = try WatchRecorder.source(dir.file("dag/l0").path, name: "dag", followSymlinks: true)
        source.maxEntries = EntryBound(1_000)
        let recorder = try await WatchRecorder.watching(sources: [source], settle: .milliseconds(300))
        defer { recorder.stop() }
        await recorder.waitUntilWatching()
        let logged = recorder.logged.joined(separator: "\n")
        #expect(logged.contains("stopped watching: more than 1000 entries"), "\(logged.suffix(1000))")
        try dir.write("dag/l0/new.txt", "n")
        #expect(await recorder.wait { recorder.reported.contains(FileKey(source: "dag", path: "new.txt")) }, "\(recorder.reported.suffix(5))")
    }
}
