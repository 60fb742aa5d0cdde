import Foundation
import SyncgateTestSupport
import Testing

/// A flaky server is not an absent one, with the real binary: moto's S3 behind the fault proxy's `flaky` mode, which
/// answers a seeded random share of requests with `500 InternalError`.
@Suite("flaky servers (real binary)", .serialized, .enabled(if: AllDestinations.shouldRun, "needs moto"))
struct FlakyServerTests {
    static func config(_ dir: TemporaryDirectory, port: Int, server: S3TestServer, bucket: String, retries: Int = 2) throws {
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
                secret_access_key: "\(server.secretAccessKey)"
                concurrency: 8
                retry: { file: \(retries), artwork: 2, base_delay: 100ms, max_delay: 2s }
            """)
    }

    static func write(_ count: Int, into dir: TemporaryDirectory) throws -> [String: Data] {
        var expected: [String: Data] = [:]
        for i in 0..<count {
            let data = Data("record \(i) ".utf8) + Data(repeating: UInt8(i % 251), count: 200 + i % 700)
            try dir.write("outbox/r\(i / 100)/\(i).bin", data)
            expected["r\(i / 100)/\(i).bin"] = data
        }
        return expected
    }

    static func check(_ server: S3TestServer, bucket: String, dir: TemporaryDirectory, expected: [String: Data]) async throws -> [String] {
        let objects = try await server.objects(bucket: bucket, into: dir.file("readback"))
        var problems: [String] = []
        for (key, data) in expected where objects[key]?.data != data { problems.append(key) }
        if objects.count != expected.count { problems.append("\(objects.count) objects for \(expected.count) files") }
        return problems
    }

    /// 30% of requests fail at random: the destination is never judged away; one `sync` delivers everything, or
    /// leaves the few files whose six attempts all failed (0.3^6: about one file in 1,400) for a second run that
    /// finishes. (With `retry.file: 2`, 0.3^3 = 2.7% of the files spend their retries in each run: the bench's
    /// "flaky" case counts the runs that takes.)
    @Test func thirtyPercentRandomErrorsDeliverEveryFileInAtMostTwoRuns() async throws {
        let server = try await S3TestServer(buckets: ["flaky"])
        defer { server.stop() }
        let proxy = try await FaultProxy.start(targetPort: server.port)
        defer { proxy.stop() }
        let dir = try TemporaryDirectory("sg-flaky")
        defer { dir.remove() }
        try Self.config(dir, port: proxy.port, server: server, bucket: "flaky", retries: 5)
        let expected = try Self.write(2000, into: dir)
        try proxy.flaky(fraction: 0.3, seed: 42)
        let cli = SyncgateCLI(dir: dir)
        let first = try await cli.run(["sync", "--json"], timeout: 600)
        #expect(first.status == 0 || first.status == 75, "\(first.stderr.suffix(2000))")
        let waited = SyncgateCLI.events(first.stdout).filter { $0["event"] as? String == "waiting" }
        #expect(waited.isEmpty, "the destination was judged away: \(waited.prefix(2))")
        let synced = SyncgateCLI.events(first.stdout).filter { $0["event"] as? String == "synced" }.count
        #expect(synced >= 1980, "the first run delivered \(synced) of 2000")
        #expect(try await DestinationAwayTests.destination(cli)["state"] as? String == "available")
        if first.status != 0 {
            let second = try await cli.run(["retry", "--json"], timeout: 600)
            #expect(second.status == 0, "\(second.stderr.suffix(2000))")
        }
        try proxy.pass()
        let problems = try await Self.check(server, bucket: "flaky", dir: dir, expected: expected)
        #expect(problems.isEmpty, "\(problems.prefix(5))")
        let failedRequests = try proxy.log().reduce(0) { $0 + (($1["failed"] as? Int) ?? 0) }
        #expect(failedRequests > 300, "the proxy failed only \(failedRequests) requests")
    }

    /// Every request fails for 10 s, then none: the same `sync` holds its uploads, tries one trial upload per
    /// cool-down (half-open), and finishes once a trial succeeds, within `unavailable_wait` (30 s).
    @Test func aServerFailingEverythingForTenSecondsIsWaitedForInHalfOpen() async throws {
        let server = try await S3TestServer(buckets: ["outage"])
        defer { server.stop() }
        let proxy = try await FaultProxy.start(targetPort: server.port)
        defer { proxy.stop() }
        let dir = try TemporaryDirectory("sg-outage")
        defer { dir.remove() }
        try Self.config(dir, port: proxy.port, server: server, bucket: "outage")
        let expected = try Self.write(300, into: dir)
        try proxy.flaky(fraction: 1.0, seed: 1)
        let cli = SyncgateCLI(dir: dir)
        let process = try cli.start(["sync", "--json"])
        // Ten seconds from the first failed request (a loaded machine may start the run late).
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline, try proxy.log().reduce(0, { $0 + (($1["failed"] as? Int) ?? 0) }) == 0 {
            try await Task.sleep(for: .milliseconds(50))
        }
        try await Task.sleep(for: .seconds(10))
        try proxy.pass()
        let ended = await ProcessRunner.waitForExit(process, timeout: 120)
        if !ended { kill(process.processIdentifier, SIGKILL) }
        #expect(ended)
        #expect(process.terminationStatus == 0, "the run did not finish after the outage: exit \(process.terminationStatus)")
        let problems = try await Self.check(server, bucket: "outage", dir: dir, expected: expected)
        #expect(problems.isEmpty, "\(problems.prefix(5))")
        #expect(try await DestinationAwayTests.destination(cli)["failed"] as? Int == 0)
    }
}
