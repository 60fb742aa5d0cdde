import Foundation
import SyncgateTestSupport
import Testing

/// `after_sync: delete` under `kill -9` at random moments, with the real binary: after every kill, each file gone
/// from the source is at every destination it is routed to, byte for byte; the runs that follow finish the move.
@Suite("move (after_sync: delete) under kill -9", .serialized)
struct MoveCrashTests {
    static var kills: Int { Int(ProcessInfo.processInfo.environment["SYNCGATE_CRASH_KILLS"] ?? "") ?? 12 }

    @Test func noSourceFileIsDeletedBeforeEveryDestinationHoldsIt() async throws {
        let dir = try TemporaryDirectory("sg-move-crash")
        defer { dir.remove() }
        let cli = SyncgateCLI(dir: dir)
        // The slow destination's bandwidth stretches each run (see addFiles). `keep` files go to the archive only and
        // are never deleted.
        try dir.write("plugins.yaml", """
            version: 1
            sources:
              - {name: inbox, path: inbox, after_sync: delete}
              - {name: keep, path: keep}
            destinations:
              - {name: archive, type: local, path: archive}
              - {name: slow, type: local, path: slow, bandwidth: 1MiB, concurrency: 2}
            routes:
              - {sources: [inbox], to: [archive, slow]}
              - {sources: [keep], to: [archive]}
            """)
        var generator = SplitMix(seed: UInt64(Date().timeIntervalSince1970))
        var expected: [String: Data] = [:]
        /// Each run gets new files (25, about 250 KiB: a quarter of a second at the slow destination), so that every
        /// kill can land before, during or after its deliveries and its deletions.
        func addFiles(_ round: Int) throws {
            for i in 0..<25 {
                var bytes = Data(count: 8192 + Int(generator.next() % 4096))
                for j in stride(from: 0, to: bytes.count, by: 8) { bytes[j] = UInt8(truncatingIfNeeded: generator.next()) }
                let path = "batch\(i % 3)/r\(round)-\(i).bin"
                try dir.write("inbox/" + path, bytes)
                expected[path] = bytes
            }
        }
        try dir.write("keep/report.txt", "kept")
        try addFiles(0)
        #expect(try await cli.run(["sync"]).status == 0)

        func check(after moment: String) throws -> [String] {
            var problems: [String] = []
            for (path, bytes) in expected.sorted(by: { $0.key < $1.key }) {
                if let now = try? dir.read("inbox/" + path) {
                    if now != bytes { problems.append("\(path): the source file changed") }
                    continue
                }
                for destination in ["archive", "slow"] where (try? dir.read("\(destination)/\(path)")) != bytes {
                    problems.append("\(path): gone from the source but not at \(destination) (\(moment))")
                }
            }
            if !dir.exists("keep/report.txt") { problems.append("keep/report.txt was deleted (\(moment))") }
            return problems
        }

        // Each round's kill lands at a random moment within a span that follows how long runs take on this machine
        // now: longer after a run that ended before its kill, shorter after one cut short. So the moments keep
        // falling before, during and after a run's deliveries and deletions, loaded machine or not.
        var span = 600.0
        var moments: [Int] = []
        var cutShort = 0
        for round in 1...Self.kills {
            try addFiles(round)
            let delay = 10 + Int(generator.next() % UInt64(span))
            moments.append(delay)
            let process = try cli.start(["sync"])
            let deadline = ContinuousClock.now + .milliseconds(delay)
            while process.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
            kill(process.processIdentifier, SIGKILL)
            await ProcessRunner.waitForExit(process)
            let wasCut = process.terminationReason == .uncaughtSignal
            if wasCut { cutShort += 1 }
            span = wasCut ? min(span * 1.5, 60_000) : max(span * 0.6, 50)
            let problems = try check(after: "kill at \(delay) ms")
            #expect(problems.isEmpty, "\(problems.prefix(5))")
            if !problems.isEmpty { return }
            // The next run starts from what this one left: one more run (not killed) finishes it, so that each
            // round's run is about as long as the one before.
            _ = try await cli.run(["sync"])
            #expect(try check(after: "the run after the kill at \(delay) ms").isEmpty)
        }
        #expect(cutShort >= 1 && cutShort < Self.kills, "runs cut short: \(cutShort) (moments \(moments) ms): some must be, some not")
        let movedBeforeEnd = expected.keys.filter { !dir.exists("inbox/" + $0) }.count

        var last: ProcessResult? = nil
        for _ in 0..<5 {
            last = try await cli.run(["sync"])
            if last?.status == 0 { break }
        }
        #expect(last?.status == 0, "\(last?.stderr.suffix(2000) ?? "")")
        #expect(try check(after: "the final run").isEmpty)
        let left = try FileManager.default.subpathsOfDirectory(atPath: dir.file("inbox").path).filter { $0.hasSuffix(".bin") }
        #expect(left.isEmpty, "every file moved: \(left.prefix(5))")
        print("move under kill -9: \(cutShort) of \(Self.kills) runs cut short at \(moments) ms; \(movedBeforeEnd) of \(expected.count) files moved before the final run")

        // The moved rows are not counted (they are listed apart until dropped, `recent.completed` later); the kept
        // file is.
        let status = try #require(SyncgateCLI.json(try await cli.run(["status", "--json"]).stdout))
        let destinations = status["destinations"] as? [[String: Any]] ?? []
        let archive = destinations.first { $0["name"] as? String == "archive" }
        #expect(archive?["synced"] as? Int == 1 && archive?["pending"] as? Int == 0, "\(String(describing: archive))")
        #expect((archive?["removed"] as? Int ?? 0) <= expected.count, "\(String(describing: archive))")
    }
}
