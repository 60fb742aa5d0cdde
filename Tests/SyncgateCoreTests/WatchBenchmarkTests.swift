import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
@testable import SyncgateCore
import SyncgateTestSupport
import Testing

/// Figures for `scripts/bench-watch`, printed (lines starting `watch-bench:`), never asserted: how long a file takes
/// from its write to its report at settle 0 and at 1 s, and the memory of a watcher under a million inotify
/// events. Off unless `SYNCGATE_WATCH_BENCH` is set. What is asserted is only that every file was reported (a
/// fast watcher that loses files would make its figures meaningless).
@Suite("watch: benchmark", .serialized, .enabled(if: ProcessInfo.processInfo.environment["SYNCGATE_WATCH_BENCH"] != nil))
struct WatchBenchmarkTests {
    static let environment = ProcessInfo.processInfo.environment
    static func setting(_ name: String, _ fallback: Int) -> Int { environment[name].flatMap(Int.init) ?? fallback }

    /// Files written one at a time (a pause between): the time from each write (open, write 4 KiB, close) to the event
    /// naming it.
    @Test(arguments: [0, 1000])
    func latency(settleMilliseconds: Int) async throws {
        let dir = try TemporaryDirectory("sg-watch-bench")
        defer { dir.remove() }
        let count = WatchBenchmarkTests.setting("SYNCGATE_WATCH_BENCH_LATENCY_FILES", 1000)
        let settle = Duration.milliseconds(settleMilliseconds)
        let watcher = try SourceWatcher(sources: [WatchRecorder.source(dir.path)], settle: settle,
                                        logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }))
        defer { watcher.stop() }
        let start = ContinuousClock.now
        let reports = ReportTimes(count: count)
        let consumer = Task {
            for await event in watcher.events {
                guard case .files(let keys) = event else { continue }
                let now = ContinuousClock.now
                for key in keys { reports.set(Int(key.path.dropFirst())!, now - start) }
                if reports.done { break }
            }
        }
        while !watcher.isWatching { try await Task.sleep(for: .milliseconds(10)) }
        var closed: [Duration] = []
        for index in 0..<count {
            // Taken just before the write (the report can come before the writer is scheduled again).
            closed.append(ContinuousClock.now - start)
            try WatchBenchmarkTests.write(dir.path + "/f\(index)", bytes: 4096)
            try await Task.sleep(for: .milliseconds(5))
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while !reports.done && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        consumer.cancel()
        let latencies = (0..<count).compactMap { index in reports.get(index).map { $0 - closed[index] } }.sorted()
        #expect(latencies.count == count, "reported \(latencies.count) of \(count) files")
        guard !latencies.isEmpty else { return }
        func ms(_ d: Duration) -> String { String(format: "%.1f ms", Double(d.components.seconds) * 1e3 + Double(d.components.attoseconds) / 1e15) }
        print("watch-bench: latency settle=\(settleMilliseconds)ms files=\(count): p50 \(ms(latencies[latencies.count / 2]))"
            + " p99 \(ms(latencies[latencies.count * 99 / 100])) max \(ms(latencies.last!))")
    }

    /// Many files in many folders, each written and then written again, while a consumer takes the batches: how
    /// many events the watcher read, how long it took, and the process's memory (resident) before, at its peak and
    /// after; sampled along the way to show whether it grows with the events.
    @Test func memoryUnderAMillionEvents() async throws {
        let dir = try TemporaryDirectory("sg-watch-bench")
        defer { dir.remove() }
        let files = WatchBenchmarkTests.setting("SYNCGATE_WATCH_BENCH_FILES", 200_000)
        let rounds = WatchBenchmarkTests.setting("SYNCGATE_WATCH_BENCH_ROUNDS", 2)
        let folders = 200
        for folder in 0..<folders { try FileManager.default.createDirectory(atPath: dir.path + "/d\(folder)", withIntermediateDirectories: true) }
        let settle = Duration.milliseconds(WatchBenchmarkTests.setting("SYNCGATE_WATCH_BENCH_SETTLE_MS", 1000))
        let watcher = try SourceWatcher(sources: [WatchRecorder.source(dir.path)], settle: settle,
                                        logger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }))
        defer { watcher.stop() }
        while !watcher.isWatching { try await Task.sleep(for: .milliseconds(10)) }
        let seen = ReportTimes(count: files)
        let counts = Counts()
        let consumer = Task {
            for await event in watcher.events {
                switch event {
                case .files(let keys):
                    counts.add(files: keys.count)
                    for key in keys {
                        let name = key.path.split(separator: "/").last!.dropFirst()
                        seen.set(Int(name)!, .zero)
                    }
                case .rescan:
                    counts.add(rescans: 1)
                case .removed:
                    break
                }
            }
        }
        let before = WatchBenchmarkTests.memory()
        WatchBenchmarkTests.resetPeak()
        let sampler = Task {
            var samples: [Int] = []
            while !Task.isCancelled {
                samples.append(WatchBenchmarkTests.memory().rss)
                try? await Task.sleep(for: .milliseconds(500))
            }
            return samples
        }
        let start = ContinuousClock.now
        for round in 0..<rounds {
            for index in 0..<files {
                try WatchBenchmarkTests.write(dir.path + "/d\(index % folders)/f\(index)", bytes: 64 + round)
            }
        }
        let written = ContinuousClock.now - start
        let deadline = ContinuousClock.now + .seconds(120)
        while !(seen.done && watcher.queueDepth == 0) && counts.rescans == 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        try await Task.sleep(for: .seconds(2))
        let took = ContinuousClock.now - start
        sampler.cancel()
        let samples = await sampler.value
        let after = WatchBenchmarkTests.memory()
        consumer.cancel()
        let mib = { (kib: Int) in String(format: "%.1f MiB", Double(kib) / 1024) }
        let seconds = { (d: Duration) in String(format: "%.1f s", Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18) }
        print("watch-bench: memory settle=\(settle) files=\(files) x \(rounds) writes in \(folders) folders: \(watcher.eventsRead) inotify events read,"
            + " \(counts.files) files reported in \(counts.batches) batches, \(counts.rescans) rescans;"
            + " written in \(seconds(written)), all reported after \(seconds(took))")
        print("watch-bench: memory rss before \(mib(before.rss)), peak \(mib(after.peak)) (+\(mib(after.peak - before.rss))),"
            + " after \(mib(after.rss)); samples min \(mib(samples.min() ?? 0)) max \(mib(samples.max() ?? 0))")
        #expect(counts.rescans > 0 || seen.done, "not every file was reported, and no rescan was asked for")
    }

    /// Writes a file the plain way: open, one write, close.
    static func write(_ path: String, bytes: Int) throws {
        let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let data = [UInt8](repeating: 120, count: bytes)
        _ = data.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, bytes) }
        close(fd)
    }

    /// Resident and peak resident memory of this process (KiB).
    static func memory() -> (rss: Int, peak: Int) {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
        }
        return (field("VmRSS"), field("VmHWM"))
    }

    /// Starts the peak resident memory afresh from now (`clear_refs` 5).
    static func resetPeak() {
        try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    }

    /// When each numbered file was first reported.
    final class ReportTimes: @unchecked Sendable {
        private let lock = NSLock()
        private var times: [Duration?]
        private var remaining: Int

        init(count: Int) {
            times = Array(repeating: nil, count: count)
            remaining = count
        }

        func set(_ index: Int, _ time: Duration) {
            lock.withLock {
                guard index < times.count, times[index] == nil else { return }
                times[index] = time
                remaining -= 1
            }
        }

        func get(_ index: Int) -> Duration? { lock.withLock { times[index] } }
        var done: Bool { lock.withLock { remaining == 0 } }
    }

    final class Counts: @unchecked Sendable {
        private let lock = NSLock()
        private var counts = (files: 0, batches: 0, rescans: 0)
        func add(files: Int = 0, rescans: Int = 0) {
            lock.withLock {
                counts.files += files
                counts.batches += files > 0 ? 1 : 0
                counts.rescans += rescans
            }
        }
        var files: Int { lock.withLock { counts.files } }
        var batches: Int { lock.withLock { counts.batches } }
        var rescans: Int { lock.withLock { counts.rescans } }
    }
}
