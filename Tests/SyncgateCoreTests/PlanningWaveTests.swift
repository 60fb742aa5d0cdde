import Foundation
@testable import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport
import Testing

/// A sync plans and delivers in waves where remote names cannot clash (``PlanningPass``): what it holds stays a few
/// waves however many files it sends, each wave is recorded pending before its uploads, and the ledger is read
/// beside the walk one short transaction per wave. Waves are made tiny here so that a handful of files spans many.
@Suite("planning in waves")
struct PlanningWaveTests {
    let dir: TemporaryDirectory

    init() throws { dir = try TemporaryDirectory("sg-waves") }

    /// One destination per source (`a` -> `carA`, `b` -> `carB`), each a ``FlakyDestination``.
    func engine(_ destinations: [String: FlakyDestination], sources: [String] = ["a"], state: StateLocation? = nil) throws -> SyncEngine {
        let registry = PluginRegistry([PluginRegistration(type: "flaky", summary: "test") { setup in destinations[setup.name]! }])
        let config = try GatewayConfig.parse(text: """
            version: 1
            state: state/ledger.sqlite
            sources: [\(sources.map { "{name: \($0), path: \($0)}" }.joined(separator: ", "))]
            destinations: [\(sources.map { "{name: car\($0.uppercased()), type: flaky, concurrency: 2}" }.joined(separator: ", "))]
            routes: [\(sources.map { "{match: ['**/*'], sources: [\($0)], to: [car\($0.uppercased())]}" }.joined(separator: ", "))]
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: registry)
        return SyncEngine(config: config, ledger: try Ledger(state: state ?? config.state))
    }

    func options(wave: Int) -> SyncOptions {
        var options = SyncOptions()
        options.waveSize = wave
        return options
    }

    /// Rows of the ledger at the moment of each upload's start, and the file's own row then.
    final class Watch: @unchecked Sendable {
        let lock = NSLock()
        var rowsAtStart: [Int] = []
        var statusAtStart: [String: FileStatus] = [:]
        var synced = 0
        /// Files synced at the slow destination when the other one started its first upload.
        var syncedAtOtherStart: Int?
    }

    /// On both engines: the waves read PostgreSQL's rows by keyset pages as they read SQLite's by cursor.
    @Test(arguments: LedgerEngine.testable) func aFirstSyncIsRecordedAndSentWaveByWave(ledgerEngine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await ledgerEngine.withStates(dir) { state, _ in
            for index in 0..<60 { try dir.write(String(format: "a/d%d/f%02d.txt", index % 3, index), "file \(index)") }
            let car = FlakyDestination()
            car.distinctNames = true
            let engine = try engine(["carA": car], state: try await state("ledger"))
            let ledger = engine.ledger
            let watch = Watch()
            let summary = try await engine.run(options(wave: 8)) { event in
                guard case .started = event.kind else { return }
                let entries = (try? ledger.blockingEntries()) ?? []
                watch.lock.withLock {
                    watch.rowsAtStart.append(entries.count)
                    watch.statusAtStart[event.file.path] = entries.first { $0.file == event.file }?.status
                }
            }
            #expect(summary.uploaded == 60)
            #expect(car.storedNames.count == 60)
            await #expect(try ledger.entries().allSatisfy { $0.status == .synced })
            // Recording runs at most one wave ahead of sending (the next wave is staged while one is sent): when the
            // i-th upload starts, the waves up to its own are in the ledger, perhaps the next one, and no later one
            // (the last wave holds 4). What the run holds does not grow with the number of files. Waves hold 8; on a
            // shared ledger (PostgreSQL) a walk's first wave holds 4 (a split walk's first waves are small).
            let sizes = (ledger.sharesWork ? [4] : []) + Array(repeating: 8, count: 8)
            let ends = sizes.reduce(into: [Int]()) { $0.append(min(60, ($0.last ?? 0) + $1)) }
            func wave(_ upload: Int) -> Int { ends.firstIndex { upload < $0 } ?? ends.count - 1 }
            #expect(watch.rowsAtStart.count == 60)
            #expect(watch.rowsAtStart.first.map { $0 == ends[0] || $0 == ends[1] } == true, "\(watch.rowsAtStart)")
            #expect(watch.rowsAtStart.enumerated().allSatisfy { (ends[wave($0.offset)]...ends[min(wave($0.offset) + 1, ends.count - 1)]).contains($0.element) },
                    "\(watch.rowsAtStart)")
            // Every file was in the ledger before its upload started.
            #expect(watch.statusAtStart.count == 60)
            #expect(watch.statusAtStart.values.allSatisfy { $0 == .pending || $0 == .uploading }, "\(watch.statusAtStart)")

            // Nothing changed: every wave's counts add up.
            let again = try await engine.run(options(wave: 8))
            #expect(again.uploaded == 0 && again.upToDate == 60 && again.files == 60)
        }
    }

    @Test func eachWaveReadsTheLedgerFromWhereTheLastEnded() async throws {
        defer { dir.remove() }
        for source in ["a", "b"] {
            for index in 0..<30 { try dir.write(String(format: "\(source)/d%d/f%02d.txt", index % 4, index), "\(source) \(index)") }
        }
        let carA = FlakyDestination(), carB = FlakyDestination()
        carA.distinctNames = true
        carB.distinctNames = true
        let engine = try engine(["carA": carA, "carB": carB], sources: ["a", "b"])
        let first = try await engine.run(options(wave: 4))
        #expect(first.uploaded == 60)
        // Five files changed, spread across waves and both sources. If a wave's read of the ledger started at the
        // wrong row, a file would be planned without its row and sent again as new.
        let changed = ["a/d0/f00.txt", "a/d1/f13.txt", "a/d3/f27.txt", "b/d2/f06.txt", "b/d1/f29.txt"]
        for path in changed { try dir.write(path, "changed, and longer than before") }
        let second = try await engine.run(options(wave: 4))
        #expect(second.uploaded == 5, "\(second)")
        #expect(second.upToDate == 55)
        #expect(carA.attemptCount("d1/f13.txt") == 2 && carA.attemptCount("d1/f01.txt") == 1)
        #expect(carB.attemptCount("d1/f29.txt") == 2 && carB.attemptCount("d0/f00.txt") == 1)
    }

    @Test func aClashIsStillFoundAcrossWavesWhereNamesAreFlattened() async throws {
        defer { dir.remove() }
        // 'a/b.txt' is walked first and 'a_b.txt' last, dozens of files (many waves of the copy) apart.
        try dir.write("outbox/a/b.txt", "folder")
        for index in 0..<40 { try dir.write(String(format: "outbox/a/c%02d.txt", index), "\(index)") }
        try dir.write("outbox/a_b.txt", "flat")
        let engine = try FlatNamesDestination.engineWithCopy(in: dir)
        let summary = try await engine.run(options(wave: 4))
        #expect(summary.uploaded == 40 + 42, "the 40 others to flat, all 42 to copy")
        let failed = try await engine.ledger.entries(destination: "flat", statuses: [.failed])
        #expect(Set(failed.map(\.file.path)) == ["a/b.txt", "a_b.txt"])
        #expect(failed.allSatisfy { $0.errorCode == "name-clash" })
        await #expect(try engine.ledger.entries(destination: "copy").count == 42)
        #expect(try dir.read("copy/a_b.txt") == Data("flat".utf8))
    }

    @Test func aDestinationPlannedWholeDoesNotWaitForAnotherDestinationsWaves() async throws {
        defer { dir.remove() }
        for index in 0..<40 { try dir.write(String(format: "outbox/f%02d.txt", index), "file \(index)") }
        // 50 ms per file: 8 files leave the flat destination 400 ms to start, even on a loaded machine.
        let slow = FlakyDestination(uploadDelay: .milliseconds(50))
        slow.distinctNames = true
        let registry = PluginRegistry([
            PluginRegistration(type: "flat", summary: "test") { _ in FlatNamesDestination() },
            PluginRegistration(type: "flaky", summary: "test") { _ in slow },
        ])
        let config = try GatewayConfig.parse(text: """
            version: 1
            state: state/ledger.sqlite
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: flat, type: flat}, {name: slow, type: flaky, concurrency: 1}]
            routes: [{match: ["**/*"], to: [flat, slow]}]
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: registry)
        let engine = SyncEngine(config: config, ledger: try Ledger(path: config.statePath))
        let watch = Watch()
        let summary = try await engine.run(options(wave: 4)) { event in
            guard case .synced = event.kind else {
                if case .started = event.kind, event.destination == "flat" {
                    watch.lock.withLock { if watch.syncedAtOtherStart == nil { watch.syncedAtOtherStart = watch.synced } }
                }
                return
            }
            if event.destination == "slow" { watch.lock.withLock { watch.synced += 1 } }
        }
        #expect(summary.uploaded == 80)
        // The slow destination gets 10 waves of 4 files, 200 ms each. When its waves held up the walk, the flat
        // destination's whole plan (and its first upload) waited for most of them (24 files when tried).
        let slowSyncedAtFlatStart = try #require(watch.lock.withLock { watch.syncedAtOtherStart })
        #expect(slowSyncedAtFlatStart <= 8, "the flat destination started after \(slowSyncedAtFlatStart) files reached the slow one")
    }

    @Test func anInterruptionBetweenWavesLeavesNothingHalfDoneAndTheNextRunSendsTheRest() async throws {
        defer { dir.remove() }
        for index in 0..<40 { try dir.write(String(format: "a/f%02d.txt", index), "file \(index)") }
        let car = FlakyDestination(uploadDelay: .milliseconds(5))
        car.distinctNames = true
        let engine = try engine(["carA": car])
        let cancellation = CancellationHandle()
        let watch = Watch()
        let summary = try await engine.run(options(wave: 4), cancellation: cancellation) { event in
            guard case .synced = event.kind else { return }
            if watch.lock.withLock({ watch.synced += 1; return watch.synced }) == 6 { cancellation.cancel() }
        }
        #expect(summary.interrupted)
        let entries = try await engine.ledger.entries()
        #expect(!entries.contains { $0.status == .uploading }, "\(entries.map(\.status))")
        let synced = entries.filter { $0.status == .synced }.count
        #expect(synced >= 6 && synced < 40, "\(synced)")
        // Files of waves never taken have no row yet; the next run finds them as new.
        #expect(entries.count < 40)

        let rest = try await engine.run(options(wave: 4))
        #expect(rest.uploaded == 40 - synced, "\(rest)")
        await #expect(try engine.ledger.entries().filter { $0.status == .synced }.count == 40)
        #expect(car.storedNames.count == 40)
    }

    @Test(arguments: LedgerEngine.testable) func theLedgerCursorForOneSourceStartsAfterAPath(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let ledger = try Ledger(state: try await state("ledger"))
            let now = Date()
            var pending: [Ledger.Pending] = []
            for (source, path) in [("a", "x/1"), ("a", "x/2"), ("a", "y"), ("b", "x/1"), ("ab", "z")] {
                for destination in ["d1", "d2"] {
                    pending.append(Ledger.Pending(file: FileKey(source: source, path: path), destination: destination, size: 1,
                                                  modificationTime: now, sha256: nil, contentChanged: false))
                }
            }
            try await ledger.recordPending(pending, at: now)
            func walk(_ source: String, after: String?) throws -> [String] {
                try ledger.withRows(source: source, after: after) { rows in
                    var seen: [String] = []
                    while let key = rows.key {
                        seen.append("\(key.source):\(key.path)@\(rows.destination ?? "?")")
                        try rows.advance()
                    }
                    return seen
                }
            }
            #expect(try walk("a", after: nil) == ["a:x/1@d1", "a:x/1@d2", "a:x/2@d1", "a:x/2@d2", "a:y@d1", "a:y@d2"])
            #expect(try walk("a", after: "x/1") == ["a:x/2@d1", "a:x/2@d2", "a:y@d1", "a:y@d2"])
            #expect(try walk("a", after: "y") == [])
            #expect(try walk("b", after: nil) == ["b:x/1@d1", "b:x/1@d2"])
        }
    }
}
