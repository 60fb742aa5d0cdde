import Foundation
@testable import SyncgateCore
import SyncgateTestSupport
import Testing

/// Many files at once: all reported, in batches; and when the kernel's queue or the watcher's own bound cannot
/// hold them, one rescan instead, with the watches still right afterwards. Real files, real inotify.
@Suite("watch: bursts", .serialized)
struct WatchBurstTests {
    @Test func aBurstOfTenThousandFilesIsReportedWholeInBatches() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        for folder in 0..<10 { try FileManager.default.createDirectory(at: dir.file("d\(folder)"), withIntermediateDirectories: true) }
        // A settle time well above any pause a machine busy with other tests puts between a file's write and its
        // close (a pause longer than it rightly reports the file twice: quiet, then changed).
        let recorder = try await WatchRecorder.watching(dir.path, settle: .seconds(3))
        defer { recorder.stop() }

        let names = (0..<10_000).map { "d\($0 % 10)/file\($0).bin" }
        // Each write (open, write, close) is timed: one that a loaded machine stretched past half the settle time may
        // rightly be reported twice (quiet after its open, then changed by its write).
        var longestWrite = Duration.zero
        for name in names {
            let started = ContinuousClock.now
            try dir.write(name, Data(name.utf8))
            longestWrite = max(longestWrite, ContinuousClock.now - started)
        }
        #expect(await recorder.wait(within: .seconds(120)) { Set(recorder.paths).count >= names.count || !recorder.rescans.isEmpty },
                "\(recorder.paths.count) of \(names.count) reported")
        try await Task.sleep(for: .seconds(4))  // past the settle time: nothing reported twice
        #expect(recorder.rescans.isEmpty, "\(recorder.rescans)")
        // Once each, as a rule; a machine busy with a full test run has made a write, or the watcher's reading of its
        // events, pause past the settle time (a file then rightly reported again: quiet, then changed), once for a
        // file in 10,000 even with every write under 1.5 s. A second report of a file is harmless (it is up to date);
        // what is ruled out is reporting files over and over: at most 1 in 100 twice.
        #expect(recorder.paths.count >= names.count && recorder.paths.count <= names.count + names.count / 100,
                "reported \(recorder.paths.count) times for \(names.count) files (the longest write took \(longestWrite))")
        if recorder.paths.count > names.count {
            print("watch burst: \(recorder.paths.count) reports for \(names.count) files; the longest write took \(longestWrite) (settle 3 s)")
        }
        #expect(Set(recorder.paths) == Set(names))
        let batches = recorder.batches
        #expect(batches.count < names.count / 10 && batches.max() ?? 0 > 10, "\(batches.count) batches")
        // Each batch comes sorted (source, then path bytes).
        for event in recorder.events {
            if case .files(let keys) = event { #expect(keys == keys.sorted()) }
        }
    }

    /// The reader stops (as a busy one would) while far more events than the kernel queues are made: the
    /// overflow brings a rescan, and the watches are set anew (a folder made during the overflow is watched).
    @Test(.enabled(if: WatchBurstTests.queueLimit.map { $0 <= 100_000 } ?? false, "needs fs.inotify.max_queued_events <= 100000"))
    func anOverflowedQueueBringsARescanAndTheWatchesAreSetAnew() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        let recorder = try await WatchRecorder.watching(dir.path, settle: .milliseconds(300))
        defer { recorder.stop() }

        recorder.watcher.pauseReading(true)
        // Three events a file (created, modified, closed): comfortably past the limit.
        let files = WatchBurstTests.queueLimit! / 3 + 2000
        for index in 0..<files { try dir.write("f\(index)", "x") }
        try dir.write("late/made-during-overflow.txt", "late")
        recorder.watcher.pauseReading(false)

        #expect(await recorder.wait(within: .seconds(60)) { recorder.rescans.contains { $0.contains("overflowed") } }, "\(recorder.rescans)")
        #expect(recorder.logged.contains { $0.contains("fs.inotify.max_queued_events") })
        // The folder whose creation was lost is watched after the recovery.
        try dir.write("late/after.txt", "after")
        #expect(await recorder.wait { recorder.count("late/after.txt") == 1 }, "a folder made during the overflow is not watched")
    }

    static let queueLimit: Int? = (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8))
        .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }

    @Test func moreFilesSettlingThanTheLimitCollapseIntoOneRescan() async throws {
        let dir = try TemporaryDirectory("sg-watch")
        defer { dir.remove() }
        let recorder = try await WatchRecorder.watching(sources: [WatchRecorder.source(dir.path)], settle: .seconds(2), pendingLimit: 100)
        defer { recorder.stop() }

        for index in 0..<300 { try dir.write("f\(index)", "x") }
        #expect(await recorder.wait { recorder.rescans.contains { $0.contains("more than 100 files changed at once") } }, "\(recorder.rescans)")
        #expect(recorder.watcher.queueDepth <= 100)
        // Afterwards the watcher settles files again as usual.
        try await Task.sleep(for: .seconds(3))
        try dir.write("after.txt", "after")
        #expect(await recorder.wait { recorder.count("after.txt") == 1 })
        #expect(recorder.paths.count <= 100 + 1, "kept more than its limit: \(recorder.paths.count)")
    }
}
