import Foundation
@testable import SyncgateCore
import SyncgateTestSupport
import Testing

/// A file is reported once it has stood unchanged for the settle time: written and closed, renamed into place,
/// written slowly; never under a name the globs leave out. Real files, real inotify.
@Suite("watch: settling", .serialized)
struct WatchSettleTests {
    @Test func aFileWrittenAndClosedIsReportedOnceAfterTheSettleTime() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        let settle = Duration.milliseconds(800)
        let recorder = try await WatchRecorder.watching(dir.path, settle: settle)
        defer { recorder.stop() }

        let written = ContinuousClock.now  // before the write: the watcher may read its event before the test goes on
        try dir.write("song.mp3", "la la la")
        #expect(await recorder.wait { recorder.count("song.mp3") > 0 }, "never reported")
        let reported = try #require(recorder.firstReport(of: "song.mp3"))
        #expect(reported - written >= settle, "reported \(reported - written) after the write, before it settled")
        #expect(recorder.reported == [FileKey(source: "src", path: "song.mp3")])

        // Left alone, it is not reported again; written again, it is.
        try await Task.sleep(for: settle * 2)
        #expect(recorder.count("song.mp3") == 1)
        try dir.write("song.mp3", "la la la la")
        #expect(await recorder.wait { recorder.count("song.mp3") == 2 }, "a second write was not reported")
        #expect(recorder.rescans.isEmpty)
    }

    @Test func aFileRenamedIntoPlaceIsReportedUnderItsNameOnly() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        let outside = try TemporaryDirectory("sg-watch-outside")
        defer { outside.remove() }
        let settle = Duration.milliseconds(600)
        let source = try WatchRecorder.source(dir.path, exclude: ["*.part"])
        let recorder = try await WatchRecorder.watching(sources: [source], settle: settle)
        defer { recorder.stop() }

        // Written slowly under an excluded temporary name (for longer than the settle time), then renamed.
        let part = dir.file("album/track.flac.part")
        try FileManager.default.createDirectory(at: part.deletingLastPathComponent(), withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: part.path, contents: nil))
        let handle = try FileHandle(forWritingTo: part)
        for _ in 0..<8 {
            try handle.write(contentsOf: Data(repeating: 7, count: 4096))
            try await Task.sleep(for: .milliseconds(150))
        }
        try handle.close()
        try FileManager.default.moveItem(at: part, to: dir.file("album/track.flac"))
        // Written outside the source, then moved in.
        try outside.write("cover.jpg", Data(repeating: 1, count: 1000))
        try FileManager.default.moveItem(at: outside.file("cover.jpg"), to: dir.file("album/cover.jpg"))

        #expect(await recorder.wait { recorder.count("album/track.flac") > 0 && recorder.count("album/cover.jpg") > 0 })
        try await Task.sleep(for: settle * 2)
        // Under their names only, never the temporary one. Once each as a rule; a full run on a busy machine once
        // reported the renamed file twice (a pause past the settle time between events; a second report is harmless).
        #expect(Set(recorder.paths) == ["album/cover.jpg", "album/track.flac"], "\(recorder.paths)")
        #expect(recorder.paths.count <= 3, "\(recorder.paths)")
        #expect(recorder.rescans.isEmpty)
    }

    /// A temporary name the excludes do not name: renamed before it settles, it is forgotten (its rename's
    /// `IN_MOVED_FROM`); left unchanged for the settle time, it is a file like any other and reported.
    @Test func aTemporaryNameNotExcludedIsReportedOnlyIfItStaysLongerThanTheSettleTime() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        // The settle time is long against the 100 ms the draft lives, so that a machine busy with other tests
        // does not stretch that into a settle time (when it does anyway, the draft may be reported: not asserted).
        let settle = Duration.seconds(4)
        let recorder = try await WatchRecorder.watching(dir.path, settle: settle)
        defer { recorder.stop() }

        try dir.write("report.tmp", "draft")
        let written = ContinuousClock.now
        try await Task.sleep(for: .milliseconds(100))
        try FileManager.default.moveItem(at: dir.file("report.tmp"), to: dir.file("report.txt"))
        let lived = ContinuousClock.now - written
        try dir.write("left.tmp", "left alone")

        #expect(await recorder.wait { recorder.count("report.txt") > 0 && recorder.count("left.tmp") > 0 })
        try await Task.sleep(for: settle)
        let expected = lived < settle ? ["left.tmp", "report.txt"] : ["left.tmp", "report.tmp", "report.txt"]
        #expect(recorder.paths.sorted() == expected, "\(recorder.paths), the draft lived \(lived)")
    }

    /// Deleted and renamed-away files are reported at once as removed (a file deleted while it settles, too), a
    /// folder's files as `rm -r` deletes them; the renamed file's new name settles as usual.
    @Test func deletedAndRenamedAwayFilesAreReportedRemovedAtOnce() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        try dir.write("old.txt", "old")
        try dir.write("moving.txt", "moving")
        try dir.write("tree/a/b.txt", "b")
        let recorder = try await WatchRecorder.watching(dir.path, settle: .milliseconds(300))
        defer { recorder.stop() }
        try FileManager.default.removeItem(at: dir.file("old.txt"))
        try FileManager.default.moveItem(at: dir.file("moving.txt"), to: dir.file("moved.txt"))
        try FileManager.default.removeItem(at: dir.file("tree"))
        try dir.write("brief.txt", "written then deleted before it settles")
        try FileManager.default.removeItem(at: dir.file("brief.txt"))
        #expect(await recorder.wait { Set(recorder.removedPaths) == ["old.txt", "moving.txt", "tree/a/b.txt", "brief.txt"] && recorder.count("moved.txt") == 1 },
                "removed \(recorder.removedPaths), reported \(recorder.paths)")
        #expect(!recorder.paths.contains("brief.txt"))
        #expect(recorder.rescans.isEmpty)
    }

    @Test func aFileWrittenSlowlyIsReportedOnceAfterItsLastWrite() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        let settle = Duration.seconds(3)
        let recorder = try await WatchRecorder.watching(dir.path, settle: settle)
        defer { recorder.stop() }

        // Held open, written in pauses well under the settle time, for longer than it. (A machine busy with other
        // tests can stretch a pause past the settle time: from then on a report is right, and not asserted.)
        let url = dir.file("video.mp4")
        #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
        let handle = try FileHandle(forWritingTo: url)
        var longestPause = Duration.zero
        for _ in 0..<20 {
            try handle.write(contentsOf: Data(repeating: 9, count: 64 << 10))
            let wrote = ContinuousClock.now
            try await Task.sleep(for: .milliseconds(200))
            longestPause = max(longestPause, ContinuousClock.now - wrote)
            if longestPause < settle {
                #expect(recorder.count("video.mp4") == 0, "reported while still being written")
            }
        }
        let lastWrite = ContinuousClock.now
        try handle.write(contentsOf: Data(repeating: 9, count: 64 << 10))
        try handle.close()

        #expect(await recorder.wait { recorder.count("video.mp4") > 0 })
        let reported = try #require(recorder.firstReport(of: "video.mp4"))
        if longestPause < settle {
            #expect(reported - lastWrite >= settle, "reported \(reported - lastWrite) after the last write")
            try await Task.sleep(for: settle)
            #expect(recorder.count("video.mp4") == 1)
        }
        #expect(try dir.read("video.mp4").count == 21 * (64 << 10))
    }

    /// A file opened (created empty) long before its first byte, as a download waiting for the network: not
    /// reported empty; reported once written and closed. A hard link and a file linked in whole (`O_TMPFILE`, then
    /// `linkat`), which get no event but their creation, are reported.
    @Test func aFileCreatedEmptyWaitsForItsWritesWhileLinksAreReportedOnCreation() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        let settle = Duration.milliseconds(500)
        let recorder = try await WatchRecorder.watching(dir.path, settle: settle)
        defer { recorder.stop() }

        let fd = open(dir.file("download.iso").path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
        #expect(fd >= 0)
        try await Task.sleep(for: settle * 3)
        #expect(recorder.count("download.iso") == 0, "reported while empty and still open")
        let bytes = [UInt8](repeating: 1, count: 10_000)
        #expect(bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count)
        close(fd)

        try dir.write("original.txt", "o")
        #expect(link(dir.file("original.txt").path, dir.file("hard.txt").path) == 0)

        // O_TMPFILE (020200000 on Linux: __O_TMPFILE | O_DIRECTORY): written unnamed, then given its name.
        let unnamed = open(dir.path, 0o20200000 | O_WRONLY, 0o644)
        try #require(unnamed >= 0, "O_TMPFILE is not supported here: \(String(cString: strerror(errno)))")
        #expect(bytes.withUnsafeBytes { write(unnamed, $0.baseAddress, $0.count) } == bytes.count)
        #expect(linkat(AT_FDCWD, "/proc/self/fd/\(unnamed)", AT_FDCWD, dir.file("whole.bin").path, AT_SYMLINK_FOLLOW) == 0)

        // Still open, so its creation alone told (its close comes after).
        #expect(await recorder.wait { Set(recorder.paths) == ["download.iso", "original.txt", "hard.txt", "whole.bin"] }, "\(recorder.paths)")
        close(unnamed)
        try await Task.sleep(for: settle * 2)
        #expect(recorder.count("download.iso") == 1 && recorder.count("whole.bin") == 1, "\(recorder.paths)")
    }

    /// The planner compares modification times: one set after the write (`touch -d`, `cp -p`) is a change.
    @Test func aModificationTimeSetAloneIsReported() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        try dir.write("old.txt", "o")
        let recorder = try await WatchRecorder.watching(dir.path, settle: .milliseconds(300))
        defer { recorder.stop() }

        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_000_000_000)], ofItemAtPath: dir.file("old.txt").path)
        #expect(await recorder.wait { recorder.count("old.txt") == 1 })
    }

    @Test func excludedFilesAndFoldersAreNeverReported() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        try dir.write("cache/old.mp3", "existing")  // an excluded folder there from the start
        let source = try WatchRecorder.source(dir.path, include: ["**/*.mp3", "**/*.jpg"], exclude: ["cache/", "**/.*", "drafts"])
        let recorder = try await WatchRecorder.watching(sources: [source], settle: .milliseconds(300))
        defer { recorder.stop() }

        try dir.write("a.mp3", "a")
        try dir.write("notes.txt", "not included")
        try dir.write(".hidden.mp3", "excluded by name")
        try dir.write("cache/new.mp3", "in an excluded folder")
        try dir.write("cache/deeper/more.mp3", "below an excluded folder")
        try dir.write("music/drafts/b.mp3", "in a folder excluded at any depth")
        try dir.write("music/c.jpg", "c")
        try dir.write("music/.git/d.mp3", "in an excluded hidden folder")

        #expect(await recorder.wait { recorder.paths.count >= 2 })
        try await Task.sleep(for: .seconds(1))
        #expect(recorder.paths.sorted() == ["a.mp3", "music/c.jpg"], "\(recorder.paths)")
    }

    @Test func whatAWalkSkipsIsSkippedWithAWarning() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        let recorder = try await WatchRecorder.watching(dir.path, settle: .milliseconds(200))
        defer { recorder.stop() }

        #expect(mkfifo(dir.file("pipe").path, 0o644) == 0)
        try dir.write("target.txt", "t")
        try FileManager.default.createSymbolicLink(atPath: dir.file("link.txt").path, withDestinationPath: dir.file("target.txt").path)
        let badName: [UInt8] = Array("bad-".utf8) + [0xFF, 0xFE] + Array(".txt".utf8)
        let fd = (dir.path + "/").withCString { base in
            (Array(UnsafeBufferPointer(start: base, count: strlen(base))).map { UInt8(bitPattern: $0) } + badName + [0])
                .withUnsafeBufferPointer { raw in
                    raw.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY, 0o644) }
                }
        }
        #expect(fd >= 0)
        close(fd)

        #expect(await recorder.wait { recorder.count("target.txt") > 0 })
        try await Task.sleep(for: .milliseconds(800))
        #expect(recorder.paths == ["target.txt"], "\(recorder.paths)")
        let logged = recorder.logged.joined(separator: "\n")
        #expect(logged.contains("pipe: skipped: a FIFO, not a regular file"), "\(logged)")
        #expect(logged.contains("link.txt: skipped: symbolic link"), "\(logged)")
        #expect(logged.contains("bad-\\xff\\xfe.txt: skipped: the name is not valid UTF-8"), "\(logged)")
    }
}
