import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// `sources[].min_age` (issue 18) with the real binary and the local destination: a file modified less than
/// `min_age` ago is not sent, not recorded, and reported `skipped` with its reason; `syncgate run` sends it once it
/// is old enough, on a timer of its own (not at the next rescan).
@Suite("min_age (syncgate sync and run)", .serialized)
struct MinAgeTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-min-age")
        cli = SyncgateCLI(dir: dir)
    }

    /// Writes a file and sets its modification time `age` seconds in the past.
    func write(_ path: String, _ text: String, age: TimeInterval) throws {
        let url = try dir.write(path, text)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-age)], ofItemAtPath: url.path)
    }

    func delivered() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.file("synced").path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    @Test func syncSendsOldEnoughFilesAndReportsTheTooNewOnes() async throws {
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox, min_age: 10m}]
            destinations: [{name: archive, type: local, path: synced}]
            """)
        try write("outbox/old.csv", "written an hour ago", age: 3600)
        try write("outbox/half-written.csv", "being written", age: 0)
        try write("outbox/nearly.csv", "written 5 minutes ago", age: 300)

        let first = try await cli.run(["sync", "--json"])
        #expect(first.status == 0, "too-new files are no failure: \(first.stderr)")
        #expect(delivered() == ["old.csv"])
        let events = SyncgateCLI.events(first.stdout)
        for path in ["half-written.csv", "nearly.csv"] {
            let skipped = events.filter { $0["event"] as? String == "skipped" && $0["path"] as? String == path }
            #expect(skipped.count == 1, "\(path): \(events)")
            #expect(skipped.first?["reason"] as? String == "too new (min_age 10m)")
            #expect(skipped.first?["ready_at"] is String)
            #expect(!events.contains { $0["path"] as? String == path && ["queued", "started", "synced"].contains($0["event"] as? String) })
        }
        let summary = try #require(events.last)
        #expect(summary["event"] as? String == "summary")
        #expect(summary["too_new"] as? Int == 2)
        #expect(summary["uploaded"] as? Int == 1)

        // Not recorded: the ledger has no row for them (status lists nothing pending).
        let status = try #require(SyncgateCLI.json(try await cli.run(["status", "--json"]).stdout))
        let destination = try #require((status["destinations"] as? [[String: Any]])?.first)
        #expect(destination["pending"] as? Int == 0 && destination["synced"] as? Int == 1, "\(destination)")

        // The human summary says so too (the times set again: this run must not find them old enough).
        try write("outbox/half-written.csv", "being written", age: 0)
        try write("outbox/nearly.csv", "written 5 minutes ago", age: 300)
        try write("outbox/another.csv", "new again", age: 0)
        let human = try await cli.run(["sync"])
        #expect(human.status == 0)
        #expect(human.stderr.contains("3 too new (min_age)"), "\(human.stderr)")

        // Once they are old enough they go.
        for path in ["half-written.csv", "nearly.csv", "another.csv"] { try write("outbox/\(path)", "done: \(path)", age: 601) }
        let later = try await cli.run(["sync", "--json"])
        #expect(later.status == 0)
        #expect(delivered() == ["another.csv", "half-written.csv", "nearly.csv", "old.csv"])
        #expect(try dir.read("synced/nearly.csv") == Data("done: nearly.csv".utf8))
    }

    @Test func aFileChangedSinceItWasSentWaitsAgain() async throws {
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox, min_age: 1h}]
            destinations: [{name: archive, type: local, path: synced}]
            """)
        try write("outbox/log.csv", "first version", age: 7200)
        #expect(try await cli.run(["sync"]).status == 0)
        #expect(try dir.read("synced/log.csv") == Data("first version".utf8))
        // Rewritten just now: the copy stays the first version until the new one is an hour old.
        try write("outbox/log.csv", "second version, half written", age: 0)
        let result = try await cli.run(["sync", "--json"])
        let skipped = SyncgateCLI.events(result.stdout).first { $0["event"] as? String == "skipped" }
        #expect(skipped?["reason"] as? String == "too new (min_age 1h)", "\(result.stdout)")
        #expect(try dir.read("synced/log.csv") == Data("first version".utf8))
    }

    /// The gateway: a file too new when it settles is sent once it is old enough, by a timer set for mtime +
    /// min_age (the rescan is 10 minutes away). Bounded: it must arrive within 20 s.
    @Test func theGatewaySendsATooNewFileOnceItIsOldEnough() async throws {
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox, min_age: 2s}]
            gateway: { settle: 200ms, rescan_interval: 10m }
            destinations: [{name: archive, type: local, path: synced}]
            """)
        try FileManager.default.createDirectory(at: dir.file("outbox"), withIntermediateDirectories: true)
        let gateway = try ProcessRunner.start(SyncgateCLI.binary, ["run", "-v"], currentDirectory: dir.url, logFile: dir.file("gateway.log"))
        defer {
            if gateway.isRunning { kill(gateway.processIdentifier, SIGTERM) }
            gateway.waitUntilExit()
        }
        // Written once the watches are set, so that the file comes to the gateway as a file that settled.
        let started = Date()
        while Date().timeIntervalSince(started) < 20,
              !((try? String(contentsOf: dir.file("gateway.log"), encoding: .utf8)) ?? "").contains("the watches are set") {
            try await Task.sleep(for: .milliseconds(100))
        }
        let url = try dir.write("outbox/report.csv", "fresh")
        let modified = try #require(FileStat.of(url.path)).modificationTime

        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, delivered() != ["report.csv"] { try await Task.sleep(for: .milliseconds(100)) }
        let log = (try? String(contentsOf: dir.file("gateway.log"), encoding: .utf8)) ?? ""
        #expect(delivered() == ["report.csv"], "not sent once old enough: \(log)")
        // Sent no sooner than min_age after it was written (the ledger's time of the delivery).
        let status = try #require(SyncgateCLI.json(try await cli.run(["status", "--json", "report.csv"]).stdout))
        let row = try #require((status["files"] as? [[String: Any]])?.first, "\(status)")
        let syncedAt = try #require((row["synced_at"] as? String).flatMap(JSONTime.parse))
        #expect(syncedAt.timeIntervalSince(modified) >= 2 - 0.01, "synced \(syncedAt.timeIntervalSince(modified)) s after it was written")
        if gateway.isRunning { kill(gateway.processIdentifier, SIGTERM) }
        #expect(await ProcessRunner.waitForExit(gateway, timeout: 20))
    }
}

/// Reads the ledger's times as `sync --json` and `status --json` write them (ISO 8601 with milliseconds).
enum JSONTime {
    static func parse(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}
