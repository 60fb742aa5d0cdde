import Foundation
import SyncgateTestSupport
import Testing

/// Destinations come and go, with the real binary: a head unit that is away (nothing listening, or a peer that
/// accepts and never answers) and an S3 endpoint that is down cost one bounded run each, fail no file, and the
/// first run after they are back sends everything that waited. The fault proxy's "down for N runs" mode plays the
/// car that drives away and comes back.
@Suite("destinations away (real binary)", .enabled(if: AllDestinations.shouldRun, "needs moto and the head-unit simulator"))
struct DestinationAwayTests {
    static func events(_ result: ProcessResult, _ name: String) -> [[String: Any]] {
        SyncgateCLI.events(result.stdout).filter { $0["event"] as? String == name }
    }

    /// `status --json`'s line for the one destination.
    static func destination(_ cli: SyncgateCLI) async throws -> [String: Any] {
        let status = try #require(SyncgateCLI.json(try await cli.run(["status", "--json"]).stdout))
        return try #require((status["destinations"] as? [[String: Any]])?.first)
    }

    static func headUnitConfig(port: Int, files: Int, dir: TemporaryDirectory, extra: String = "") throws {
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: car
                type: headunit
                host: 127.0.0.1
                port: \(port)
                app: { name: "Away", id: "584421907" }
                connect_timeout: 1s
                response_timeout: 1s
                retry: { file: 3, artwork: 3, base_delay: 100ms, max_delay: 400ms, give_up_after: 7d }
            \(extra)
            """)
        for i in 0..<files { try dir.write(String(format: "outbox/f%03d.bin", i), Data(repeating: UInt8(i % 251), count: 1024 + i)) }
    }

    @Test func anAbsentHeadUnitCostsOneShortRunAndTheFirstRunAfterItIsBackSendsEverything() async throws {
        let sim = try await HeadUnitSimulatorProcess()
        defer { sim.stop() }
        let proxy = try await FaultProxy.start(targetPort: sim.port)
        defer { proxy.stop() }
        let dir = try TemporaryDirectory("sg-away-car")
        defer { dir.remove() }
        try Self.headUnitConfig(port: proxy.port, files: 500, dir: dir)
        let cli = SyncgateCLI(dir: dir)
        try proxy.down(runs: 2)  // the car is away for two runs, nothing listening on its port

        for run in 1...2 {
            let result = try await cli.run(["sync", "--json"])
            try proxy.runEnded()
            #expect(result.status == 75, "run \(run): \(result.stderr)")
            #expect(Self.events(result, "failed").isEmpty, "run \(run): \(Self.events(result, "failed").prefix(2))")
            // Bounded by one connection attempt, not one per file (generous for a loaded machine).
            #expect(result.seconds < 15, "run \(run) took \(result.seconds) s")
            let summary = try #require(Self.events(result, "summary").first)
            #expect(summary["waiting"] as? Int == 500)
            let line = try await Self.destination(cli)
            #expect(line["state"] as? String == "unavailable")
            #expect(line["waiting"] as? Int == 500)
            #expect(line["failed"] as? Int == 0)
        }
        let text = try await cli.run(["status"])
        #expect(text.stdout.contains("car: unavailable since"), "\(text.stdout)")
        #expect(text.stdout.contains("500 files wait for it"), "\(text.stdout)")

        // Back: one run delivers all 500.
        let result = try await cli.run(["sync", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.events(result, "synced").count == 500)
        for i in 0..<500 {
            let name = String(format: "f%03d.bin", i)
            #expect(try sim.storage.read(name) == Data(repeating: UInt8(i % 251), count: 1024 + i), "\(name)")
        }
        #expect(try await Self.destination(cli)["state"] as? String == "available")
    }

    @Test func aHeadUnitThatAcceptsButNeverAnswersCostsTheTimeoutsOnce() async throws {
        let sim = try await HeadUnitSimulatorProcess()
        defer { sim.stop() }
        let proxy = try await FaultProxy.start(targetPort: sim.port)
        defer { proxy.stop() }
        let dir = try TemporaryDirectory("sg-away-stall")
        defer { dir.remove() }
        try Self.headUnitConfig(port: proxy.port, files: 50, dir: dir)
        try proxy.set(["mode": "stall"])
        let cli = SyncgateCLI(dir: dir)
        let result = try await cli.run(["sync", "--json"])
        #expect(result.status == 75, "\(result.stderr)")
        #expect(Self.events(result, "failed").isEmpty)
        // connect (instant) + response timeout (1 s), once: far below 50 files x 1 s.
        #expect(result.seconds < 15, "took \(result.seconds) s")
        #expect(try await Self.destination(cli)["state"] as? String == "unavailable")
        try proxy.pass()
        let again = try await cli.run(["sync"])
        #expect(again.status == 0, "\(again.stderr)")
    }

    @Test func anEightDayAbsenceGivesUpNothing() async throws {
        let sim = try await HeadUnitSimulatorProcess()
        defer { sim.stop() }
        let proxy = try await FaultProxy.start(targetPort: sim.port)
        defer { proxy.stop() }
        let dir = try TemporaryDirectory("sg-away-holiday")
        defer { dir.remove() }
        try Self.headUnitConfig(port: proxy.port, files: 20, dir: dir)
        let cli = SyncgateCLI(dir: dir)
        try proxy.down(runs: 2)
        #expect(try await cli.run(["sync"]).status == 75)
        try proxy.runEnded()
        // Eight days pass (the ledger's clock is moved back; give_up_after is 7 days). One file had also failed on
        // its own an hour before the car left: its failure clock must count only the hour.
        let state = dir.file(".syncgate/state.sqlite").path
        let day = 86400.0
        let sql = """
            UPDATE files SET queued_at = queued_at - \(8 * day), updated_at = updated_at - \(8 * day);
            UPDATE files SET status = 'failed', error_class = 'retryable', last_error = 'busy', failed_runs = 1, attempts = 1,
                first_failed_at = strftime('%s','now') - \(8 * day + 3600), next_retry_at = strftime('%s','now') - \(8 * day)
                WHERE path = 'f000.bin';
            UPDATE destinations SET since = since - \(8 * day);
            """
        let aged = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/sqlite3"), [state, sql])
        #expect(aged.status == 0, "\(aged.stderr)")
        let still = try await cli.run(["sync", "--json"])
        try proxy.runEnded()
        #expect(still.status == 75)
        #expect(Self.events(still, "failed").isEmpty)
        let back = try await cli.run(["sync", "--json"])
        #expect(back.status == 0, "\(back.stderr)")
        #expect(Self.events(back, "synced").count == 20)
        #expect(!back.stdout.contains("gave up"))
        let failed = try await cli.run(["status", "--json", "--failed"])
        #expect((SyncgateCLI.json(failed.stdout)?["files"] as? [Any])?.isEmpty == true)
    }

    @Test func anS3EndpointThatIsDownCostsOneShortRunPerRun() async throws {
        let server = try await S3TestServer(buckets: ["away"])
        defer { server.stop() }
        let proxy = try await FaultProxy.start(targetPort: server.port)
        defer { proxy.stop() }
        let dir = try TemporaryDirectory("sg-away-s3")
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: bucket
                type: s3
                endpoint: http://127.0.0.1:\(proxy.port)
                region: us-east-1
                bucket: away
                access_key_id: \(server.accessKeyID)
                secret_access_key: ${S3_SECRET}
                retry: { file: 3, artwork: 3, base_delay: 100ms, max_delay: 400ms }
            """)
        for i in 0..<200 { try dir.write("outbox/d\(i).json", "{\"i\": \(i)}") }
        var cli = SyncgateCLI(dir: dir)
        cli.environment = ["S3_SECRET": server.secretAccessKey]
        try proxy.down(runs: 2)
        for run in 1...2 {
            let result = try await cli.run(["sync", "--json"])
            try proxy.runEnded()
            #expect(result.status == 75, "run \(run): \(result.stderr)")
            #expect(Self.events(result, "failed").isEmpty, "run \(run): \(Self.events(result, "failed").prefix(2))")
            #expect(result.seconds < 15, "run \(run) took \(result.seconds) s")
            #expect(try await Self.destination(cli)["state"] as? String == "unavailable")
        }
        let result = try await cli.run(["sync", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let objects = try await server.objects(bucket: "away", into: dir.file("readback"))
        #expect(objects.count == 200)
    }
}
