import Foundation
import SyncgateTestSupport
import Testing

/// `syncgate run`, the real binary as a service: it holds the state file (a `sync` is refused, `status` and
/// `retry` work alongside), sends what waits at start, drains on SIGTERM and exits 0, reads its config again on
/// SIGHUP (keeping the old one when the new one does not validate), resumes after `kill -9`, and sends a head
/// unit's files once it appears.
@Suite("gateway mode (syncgate run)", .serialized)
struct GatewayTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-gateway")
        cli = SyncgateCLI(dir: dir)
    }

    func config(destinations: String, extra: String = "") throws {
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            gateway: { settle: 200ms, rescan_interval: 1s }
            destinations:
            \(destinations)
            \(extra)
            """)
    }

    /// Starts `syncgate run -v` with its output in `gateway.log`.
    func startGateway() throws -> ChildProcess {
        try ProcessRunner.start(SyncgateCLI.binary, ["run", "-v"], currentDirectory: dir.url, logFile: dir.file("gateway.log"))
    }

    var log: String { (try? String(contentsOf: dir.file("gateway.log"), encoding: .utf8)) ?? "" }

    /// Waits (polling) until `condition` holds; false after `timeout` seconds.
    func eventually(_ timeout: TimeInterval = 30, _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return try await condition()
    }

    /// `status --json` (empty when it could not be read this time: a busy machine may make `status` wait out the
    /// gateway's write; the callers poll).
    func statusJSON() async throws -> [String: Any] {
        let result = try await cli.run(["status", "--json"])
        guard let object = SyncgateCLI.json(result.stdout) else {
            print("status --json gave no JSON (exit \(result.status)): \(result.stderr.prefix(500))")
            return [:]
        }
        return object
    }

    func stop(_ process: ChildProcess) async -> Int32 {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        if !(await ProcessRunner.waitForExit(process, timeout: 20)) {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return -9
        }
        return process.terminationStatus
    }

    @Test func sendsWhatWaitsHoldsTheStateAndDrainsOnSIGTERM() async throws {
        defer { dir.remove() }
        try config(destinations: "  - {name: archive, type: local, path: synced}")
        for i in 0..<20 { try dir.write("outbox/before-\(i).txt", "waiting \(i)") }
        let gateway = try startGateway()
        #expect(try await eventually { (try? FileManager.default.contentsOfDirectory(atPath: dir.file("synced").path).count) == 20 },
                "the files waiting at start were not sent: \(log)")
        // A one-shot sync on the same state is refused while the gateway runs; status works alongside.
        let sync = try await cli.run(["sync"])
        #expect(sync.status == 75)
        #expect(sync.stderr.contains("a gateway (pid \(gateway.processIdentifier)) is running"), "\(sync.stderr)")
        let status = try await cli.run(["status"])
        #expect(status.status == 0)
        #expect(status.stdout.contains("A gateway (syncgate run) is running"), "\(status.stdout)")
        // A file written while it runs is sent (here by the rescan; the watches send it sooner).
        try dir.write("outbox/later.txt", "later")
        #expect(try await eventually { dir.exists("synced/later.txt") }, "\(log)")
        // SIGTERM: drains and exits 0, nothing left uploading.
        #expect(await stop(gateway) == 0, "\(log)")
        let rows = try await statusJSON()["files"] as? [[String: Any]] ?? []
        #expect(rows.isEmpty, "\(rows.prefix(3))")
        #expect(try await cli.run(["sync"]).status == 0, "the state is free again")
    }

    @Test func sighupReadsTheConfigAgainAndKeepsTheOldOneWhenTheNewOneIsWrong() async throws {
        defer { dir.remove() }
        try config(destinations: "  - {name: archive, type: local, path: synced}")
        try dir.write("outbox/a.txt", "a")
        let gateway = try startGateway()
        #expect(try await eventually { dir.exists("synced/a.txt") })
        // A config with a mistake: logged with its location, the old one stays in force.
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            gateway: { settle: 200ms, rescan_interval: 1s }
            destinations:
              - {name: archive, type: local, path: synced, concurrency: 0}
            """)
        kill(gateway.processIdentifier, SIGHUP)
        #expect(try await eventually { log.contains("plugins.yaml:5:") && log.contains("the old one stays in force") }, "\(log)")
        try dir.write("outbox/b.txt", "b")
        #expect(try await eventually { dir.exists("synced/b.txt") }, "the old config still delivers: \(log)")
        // A good config with a second destination: the gateway goes on with both.
        try config(destinations: """
              - {name: archive, type: local, path: synced}
              - {name: mirror, type: local, path: mirrored}
            """)
        kill(gateway.processIdentifier, SIGHUP)
        #expect(try await eventually { dir.exists("mirrored/a.txt") && dir.exists("mirrored/b.txt") }, "\(log)")
        #expect(gateway.isRunning)
        #expect(await stop(gateway) == 0)
    }

    @Test func killNineThenRestartLosesNothingAndSendsNothingTwice() async throws {
        defer { dir.remove() }
        let sim = try await HeadUnitSimulatorProcess()
        defer { sim.stop() }
        try config(destinations: """
              - name: car
                type: headunit
                port: \(sim.port)
                app: { name: "Gateway", id: "584421907" }
            """)
        for i in 0..<150 { try dir.write(String(format: "outbox/f%03d.bin", i), Data(repeating: UInt8(i), count: 40_000)) }
        var gateway = try startGateway()
        #expect(try await eventually { sim.rpcLines("PutFile").count > 20 }, "\(log)")
        kill(gateway.processIdentifier, SIGKILL)
        gateway.waitUntilExit()
        let before = Set(try await statusJSON(all: true).filter { $0["status"] as? String == "synced" }.compactMap { $0["path"] as? String })
        gateway = try startGateway()
        let finished = try await eventually(60) {
            guard (try? sim.storage.read("f149.bin")) != nil else { return false }
            return (try await statusJSON()["files"] as? [Any])?.isEmpty == true
        }
        #expect(finished, "\(log)")
        #expect(await stop(gateway) == 0)
        for i in 0..<150 {
            let name = String(format: "f%03d.bin", i)
            #expect((try? sim.storage.read(name)) == Data(repeating: UInt8(i), count: 40_000), "\(name)")
        }
        // Nothing recorded synced before the kill was sent again after it.
        let completions = sim.rpcLines("PutFile").filter { $0.contains("SUCCESS") && $0.contains("offset=0") }
        for path in before {
            let sent = completions.filter { $0.contains("name=\(path) ") }.count
            #expect(sent <= 1, "\(path) was sent \(sent) times")
        }
    }

    /// Every ledger row, from `status --all --json`.
    func statusJSON(all: Bool) async throws -> [[String: Any]] {
        try await cli.run(["status", "--all", "--json"]).stdout.split(separator: "\n").compactMap { SyncgateCLI.json(String($0)) }
    }

    @Test func aHeadUnitThatAppearsAfterTheGatewayStartedGetsItsFilesWithoutANewFile() async throws {
        defer { dir.remove() }
        let sim = try await HeadUnitSimulatorProcess()
        defer { sim.stop() }
        let proxy = try await FaultProxy.start(targetPort: sim.port)
        defer { proxy.stop() }
        try proxy.set(["mode": "refuse"])  // the car is away
        try config(destinations: """
              - name: car
                type: headunit
                port: \(proxy.port)
                app: { name: "Gateway", id: "584421907" }
                connect_timeout: 1s
                probe_interval_max: 2s
            """, extra: "")
        for i in 0..<30 { try dir.write("outbox/t\(i).png", Data(repeating: UInt8(i), count: 5_000)) }
        let gateway = try startGateway()
        #expect(try await eventually {
            ((try await statusJSON()["destinations"] as? [[String: Any]])?.first?["state"] as? String) == "unavailable"
        }, "\(log)")
        #expect(sim.rpcLines("PutFile").isEmpty)
        // The car arrives: its files go out on the next probe (2 s at most here), without any file event.
        try proxy.pass()
        #expect(try await eventually(30) { (0..<30).allSatisfy { sim.storage.exists("t\($0).png") } }, "\(log)")
        #expect(((try await statusJSON()["destinations"] as? [[String: Any]])?.first?["state"] as? String) == "available")
        #expect(await stop(gateway) == 0)
    }

    @Test func retryWhileTheGatewayRunsIsTakenAtOnce() async throws {
        defer { dir.remove() }
        try config(destinations: "  - {name: archive, type: local, path: synced, retry: {file: 0, artwork: 0}}")
        try dir.write("outbox/blocked.txt", "blocked")
        // A folder where the file should go: the file fails (file-scoped, permanent).
        try FileManager.default.createDirectory(at: dir.file("synced/blocked.txt/in-the-way"), withIntermediateDirectories: true)
        let gateway = try startGateway()
        #expect(try await eventually { (try await statusJSON()["files"] as? [[String: Any]])?.first?["status"] as? String == "failed" }, "\(log)")
        try FileManager.default.removeItem(at: dir.file("synced/blocked.txt"))
        let retry = try await cli.run(["retry"])
        #expect(retry.status == 0, "\(retry.stderr)")
        #expect(retry.stderr.contains("the gateway"), "\(retry.stderr)")
        #expect(try await eventually(15) { (try? dir.read("synced/blocked.txt")) == Data("blocked".utf8) }, "\(log)")
        #expect(await stop(gateway) == 0)
    }

    /// Files the watches see (the periodic rescan is 10 minutes away here, so only they can send them): dropped,
    /// renamed into place from an excluded temporary name, written slowly, a folder made with files inside, and a
    /// burst of 10,000.
    /// A destination folder inside the watched source, and the state in it too: the gateway neither watches nor walks
    /// them, so a copy it writes there is not sent again, one folder deeper, at each rescan, nor is its live state.
    @Test func aGatewayDoesNotSendItsOwnCopiesAgain() async throws {
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            state: outbox/.syncgate/state.sqlite
            sources: [{name: outbox, path: outbox}]
            gateway: { settle: 200ms, rescan_interval: 1s }
            destinations:
              - {name: archive, type: local, path: outbox/synced, fsync: false}
            """)
        try dir.write("outbox/first.txt", "first")
        let gateway = try startGateway()
        #expect(try await eventually { log.contains("the watches are set") }, "\(log)")
        #expect(try await eventually(15) { (try? dir.read("outbox/synced/first.txt")) == Data("first".utf8) }, "\(log)")
        try dir.write("outbox/dropped.txt", "dropped")
        #expect(try await eventually(15) { (try? dir.read("outbox/synced/dropped.txt")) == Data("dropped".utf8) }, "\(log)")
        // Three rescans and the settle time: a copy sent again would be at synced/synced/ by now.
        try await Task.sleep(for: .seconds(3.5))
        #expect(await stop(gateway) == 0, "\(log)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("outbox/synced").path).sorted() == ["dropped.txt", "first.txt"], "\(log)")
    }

    @Test func watchedFilesGoOutOnceTheySettle() async throws {
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox, exclude: ["**/*.part"]}]
            gateway: { settle: 1s, rescan_interval: 10m }
            destinations:
              - {name: archive, type: local, path: synced, fsync: false}
            """)
        try FileManager.default.createDirectory(at: dir.file("outbox"), withIntermediateDirectories: true)
        let gateway = try startGateway()
        #expect(try await eventually { log.contains("the watches are set") }, "\(log)")

        // Dropped.
        try dir.write("outbox/dropped.txt", "dropped")
        #expect(try await eventually(15) { (try? dir.read("synced/dropped.txt")) == Data("dropped".utf8) }, "\(log)")

        // Written under an excluded temporary name, then renamed into place: only the final name, complete.
        let big = Data((0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try dir.write("outbox/big.bin.part", big)
        #expect(rename(dir.file("outbox/big.bin.part").path, dir.file("outbox/big.bin").path) == 0)
        #expect(try await eventually(15) { (try? dir.read("synced/big.bin")) == big }, "\(log)")

        // Written slowly, with pauses shorter than settle (100 ms against 1 s): sent once it is quiet, complete. A
        // loaded machine has stretched a 100 ms pause past the settle time (a fresh clone's full run sent it three
        // times, each time whole as it then was); the writer measures its own pauses, and "sent once" is only
        // claimed when every pause really stayed under half the settle time.
        _ = FileManager.default.createFile(atPath: dir.file("outbox/slow.log").path, contents: nil)
        let handle = try FileHandle(forWritingTo: dir.file("outbox/slow.log"))
        let clock = ContinuousClock()
        var lastWrite = clock.now
        var longestPause = Duration.zero
        for i in 0..<8 {
            try handle.write(contentsOf: Data("line \(i)\n".utf8))
            let now = clock.now
            if i > 0 { longestPause = max(longestPause, now - lastWrite) }
            lastWrite = now
            try await Task.sleep(for: .milliseconds(100))
        }
        try handle.close()
        let slow = (0..<8).map { "line \($0)\n" }.joined()
        #expect(try await eventually(15) { (try? dir.read("synced/slow.log")) == Data(slow.utf8) }, "\(log)")
        if longestPause < .milliseconds(500) {
            let slowRow = try await cli.run(["status", "--json", "slow.log"]).stdout
            #expect(slowRow.contains("\"attempts\" : 1"), "sent once, when it was complete: \(slowRow)")
        } else {
            print("slow writer: a pause took \(longestPause) (settle 1 s), so sending it more than once was right")
        }

        // A folder made with files inside.
        try FileManager.default.createDirectory(at: dir.file("outbox/made/deeper"), withIntermediateDirectories: true)
        for i in 0..<20 { try dir.write("outbox/made/deeper/f\(i).txt", "\(i)") }
        #expect(try await eventually(15) { (0..<20).allSatisfy { dir.exists("synced/made/deeper/f\($0).txt") } }, "\(log)")

        // A burst of 10,000 files.
        for i in 0..<10_000 { try dir.write(String(format: "outbox/burst/%02d/b%05d.txt", i % 50, i), "burst \(i)") }
        #expect(try await eventually(180) {
            ((try await statusJSON()["destinations"] as? [[String: Any]])?.first?["synced"] as? Int ?? 0) == 10_000 + 23
        }, "\(log.suffix(2000))")
        #expect(!dir.exists("synced/big.bin.part"))
        #expect(await stop(gateway) == 0)
    }

    /// Move and mirror in a gateway (the periodic rescan is 10 minutes away: only the watches can tell): a file
    /// dropped into the inbox is delivered, then deleted from it; a file deleted from the outbox has its copy deleted
    /// at the mirror (not at the archive), and a folder left empty there goes with it.
    @Test func aGatewayMovesAndMirrorsWithinSeconds() async throws {
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources:
              - {name: outbox, path: outbox}
              - {name: inbox, path: inbox, after_sync: delete}
            gateway: { settle: 200ms, rescan_interval: 10m }
            destinations:
              - {name: archive, type: local, path: archive}
              - {name: mirror, type: local, path: mirror, delete_remote: true}
            routes:
              - {sources: [outbox], to: [archive, mirror]}
              - {sources: [inbox], to: [archive]}
            """)
        try dir.write("outbox/keep.txt", "keep")
        try dir.write("outbox/deep/gone.txt", "gone")
        try FileManager.default.createDirectory(at: dir.file("inbox"), withIntermediateDirectories: true)
        let gateway = try startGateway()
        #expect(try await eventually { log.contains("the watches are set") && dir.exists("mirror/deep/gone.txt") }, "\(log)")

        try dir.write("inbox/drop.csv", "a,b\n1,2\n")
        #expect(try await eventually(15) { (try? dir.read("archive/drop.csv")) == Data("a,b\n1,2\n".utf8) && !dir.exists("inbox/drop.csv") },
                "delivered, then deleted from the inbox: \(log)")

        try FileManager.default.removeItem(at: dir.file("outbox/deep/gone.txt"))
        #expect(try await eventually(15) { !dir.exists("mirror/deep") }, "the mirror's copy and its empty folder go: \(log)")
        #expect(dir.exists("archive/deep/gone.txt") && dir.exists("mirror/keep.txt"))
        let status = try await statusJSON()
        let mirror = (status["destinations"] as? [[String: Any]])?.first { $0["name"] as? String == "mirror" }
        #expect(mirror?["synced"] as? Int == 1, "\(String(describing: mirror))")
        #expect(await stop(gateway) == 0)
    }
}
