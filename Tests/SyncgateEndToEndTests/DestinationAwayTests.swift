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
        try Self.s3Config(server: server, port: proxy.port, bucket: "away", secret: server.secretAccessKey, dir: dir,
                          retry: "{ file: 3, artwork: 3, base_delay: 100ms, max_delay: 400ms }")
        for i in 0..<200 { try dir.write("outbox/d\(i).json", "{\"i\": \(i)}") }
        let cli = SyncgateCLI(dir: dir)
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

    /// S3 behind the fault proxy, files in its outbox; `retry` as given.
    static func s3Config(server: S3TestServer, port: Int, bucket: String, secret: String, dir: TemporaryDirectory,
                         retry: String = "{ file: 0, artwork: 0 }") throws {
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: bucket
                type: s3
                endpoint: http://127.0.0.1:\(port)
                region: us-east-1
                bucket: \(bucket)
                access_key_id: \(server.accessKeyID)
                secret_access_key: "\(secret)"
                concurrency: 2
                retry: \(retry)
            """)
    }

    @Test func throttledAnswersAreWaitedOutInTheSameRunWithoutSpendingARetry() async throws {
        // Sheets: two 429 RESOURCE_EXHAUSTED in a row on the key-column read, with Retry-After: 1.
        let sheets = try await SheetsTestServer()
        defer { sheets.stop() }
        let sheetsProxy = try await FaultProxy.start(targetPort: sheets.port)
        defer { sheetsProxy.stop() }
        let dir = try TemporaryDirectory("sg-throttle-sheets")
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: tracker
                type: sheets
                spreadsheet_id: test-spreadsheet
                range: "Rows!A:B"
                credentials_file: \(sheets.keyFile.path)
                api_base: http://127.0.0.1:\(sheetsProxy.port)
                rows: records
                columns: [id, value]
                key: id
                retry: { file: 0, artwork: 0 }
            """)
        for i in 0..<4 { try dir.write("outbox/rows-\(i).csv", "id,value\nk\(i),\(i)\n") }
        try sheetsProxy.throttle(answers: 2, flavor: "sheets", retryAfter: 1)
        let cli = SyncgateCLI(dir: dir)
        let result = try await cli.run(["sync", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        // Every file waiting on the shared key-column read meets each throttled answer: they all pause, none spends
        // a retry (there are none to spend).
        #expect(try sheetsProxy.log().filter { $0["mode"] as? String == "throttle" }.count == 2)
        let retried = Self.events(result, "retrying")
        #expect(retried.count >= 2, "\(retried)")
        #expect(retried.allSatisfy { $0["class"] as? String == "deferred" && $0["scope"] as? String == "destination" && ($0["delay_ms"] as? Int ?? 0) >= 1000 })
        #expect(Self.events(result, "failed").isEmpty)
        #expect(Self.events(result, "synced").count == 4)
        #expect(try sheets.textRows(sheet: "Rows").compactMap(\.first).filter { $0.hasPrefix("k") }.sorted() == ["k0", "k1", "k2", "k3"])

        // S3: two 503 SlowDown answers, Retry-After: 1.
        let s3 = try await S3TestServer(buckets: ["slow"])
        defer { s3.stop() }
        let s3Proxy = try await FaultProxy.start(targetPort: s3.port)
        defer { s3Proxy.stop() }
        let s3Dir = try TemporaryDirectory("sg-throttle-s3")
        defer { s3Dir.remove() }
        try Self.s3Config(server: s3, port: s3Proxy.port, bucket: "slow", secret: s3.secretAccessKey, dir: s3Dir)
        for i in 0..<6 { try s3Dir.write("outbox/o\(i).txt", "object \(i)") }
        try s3Proxy.throttle(answers: 2, flavor: "s3", retryAfter: 1)
        let s3Result = try await SyncgateCLI(dir: s3Dir).run(["sync", "--json"])
        #expect(s3Result.status == 0, "\(s3Result.stderr)")
        #expect(try s3Proxy.log().filter { $0["mode"] as? String == "throttle" }.count == 2)
        #expect(Self.events(s3Result, "retrying").count == 2)
        #expect(Self.events(s3Result, "failed").isEmpty)
        #expect(try await s3.objects(bucket: "slow", into: s3Dir.file("readback")).count == 6)
    }

    @Test func rejectedCredentialsBlockUntilTheSecretIsFixedThenEverythingGoesWithoutRetry() async throws {
        let server = try await S3TestServer(buckets: ["locked"])
        defer { server.stop() }
        let dir = try TemporaryDirectory("sg-blocked")
        defer { dir.remove() }
        for i in 0..<30 { try dir.write("outbox/b\(i).txt", "blocked \(i)") }
        try Self.s3Config(server: server, port: server.port, bucket: "locked", secret: "Not/The+Secret0000000000000000000000000", dir: dir)
        let cli = SyncgateCLI(dir: dir)
        let first = try await cli.run(["sync", "--json"])
        #expect(first.status == 1, "\(first.stderr)")
        #expect(Self.events(first, "failed").isEmpty)
        let away = try #require((Self.events(first, "summary").first?["destinations_away"] as? [[String: Any]])?.first)
        #expect(away["state"] as? String == "blocked" && away["waiting"] as? Int == 30, "\(away)")
        var line = try await Self.destination(cli)
        #expect(line["state"] as? String == "blocked")
        #expect(line["error_code"] as? String == "SignatureDoesNotMatch", "\(line)")
        #expect(line["waiting"] as? Int == 30)
        // Nothing changed: the next run does not even try (no request reaches the server).
        let requests = server.log().split(separator: "\n").count
        let again = try await cli.run(["sync"])
        #expect(again.status == 1)
        #expect(again.stderr.contains("bucket: blocked since"), "\(again.stderr)")
        #expect(server.log().split(separator: "\n").count == requests)
        #expect(try await cli.run(["status", "--check"]).status == 1)
        // The secret is fixed in the config: the next run sends everything, without `syncgate retry`.
        try Self.s3Config(server: server, port: server.port, bucket: "locked", secret: server.secretAccessKey, dir: dir)
        let fixed = try await cli.run(["sync", "--json"])
        #expect(fixed.status == 0, "\(fixed.stderr)")
        #expect(Self.events(fixed, "synced").count == 30)
        line = try await Self.destination(cli)
        #expect(line["state"] as? String == "available")
        #expect(try await cli.run(["status", "--check"]).status == 0)
    }
}
