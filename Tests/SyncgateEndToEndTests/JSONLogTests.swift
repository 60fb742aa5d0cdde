import Foundation
import SyncgateTestSupport
import Testing

/// `--log-format json` on every command (issue 29): each line the built binary writes on standard error is one JSON
/// object, read line by line, with `time`, `level`, `label`, `message` and typed fields (numbers as numbers). And
/// `syncgate run` logs each delivery outcome, a burst summed up past 20 lines a second.
@Suite("JSON logs on every command (real binary)")
struct JSONLogTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-json-logs")
        cli = SyncgateCLI(dir: dir)
    }

    static let config = """
        version: 1
        sources: [{name: outbox, path: outbox}]
        destinations:
          - name: archive
            type: local
            path: synced
        """

    static let stringFields = ["destination", "source", "path", "class", "scope", "error", "error_code", "command", "suggestion", "state"]
    static let numberFields = ["bytes", "files", "code", "attempts", "failed", "delivered", "already_there", "up_to_date"]

    /// Every line of `stderr` as a JSON object, each checked: the four keys every line has, the fields typed.
    static func lines(_ stderr: String, _ what: String) -> [[String: Any]] {
        var objects: [[String: Any]] = []
        for line in stderr.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty { continue }
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else {
                Issue.record("\(what): a line on standard error is not a JSON object: \(line)")
                continue
            }
            for key in ["time", "level", "label", "message"] {
                #expect(object[key] is String, "\(what): \(key) in \(line)")
            }
            #expect(["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(object["level"] as? String ?? ""), "\(line)")
            for key in stringFields where object[key] != nil {
                #expect(object[key] is String, "\(what): \(key) is not a string in \(line)")
            }
            for key in numberFields where object[key] != nil {
                #expect(!(object[key] is String) && (object[key] as? NSNumber) != nil, "\(what): \(key) is not a number in \(line)")
            }
            objects.append(object)
        }
        // No line is cut: the text ends with a line break.
        #expect(stderr.isEmpty || stderr.hasSuffix("\n"), "\(what): \(stderr.suffix(200))")
        return objects
    }

    @Test func everyCommandWritesJSONLines() async throws {
        defer { dir.remove() }
        try dir.write("plugins.yaml", Self.config)
        try dir.write("outbox/a.txt", "alpha")
        try dir.write("outbox/sub/x.txt", "blocked")
        try dir.write("synced/sub", "a file where the folder should be")  // x.txt fails permanently

        // A sync, verbose: each file's line, the failure, the summary.
        let sync = try await cli.run(["sync", "-v", "--log-format", "json"])
        #expect(sync.status == 1, "\(sync.stderr)")
        let syncLines = Self.lines(sync.stderr, "sync")
        let synced = syncLines.first { $0["path"] as? String == "a.txt" }
        #expect(synced?["bytes"] as? Int == 5 && synced?["destination"] as? String == "archive" && synced?["level"] as? String == "info", "\(sync.stderr)")
        let failed = syncLines.first { $0["path"] as? String == "sub/x.txt" }
        #expect(failed?["level"] as? String == "error" && failed?["class"] as? String == "permanent" && failed?["scope"] as? String == "file", "\(sync.stderr)")
        let summary = syncLines.first { $0["up_to_date"] != nil }
        #expect(summary?["files"] as? Int == 1 && summary?["bytes"] as? Int == 5 && summary?["failed"] as? Int == 1 && summary?["code"] as? Int == 1,
                "\(sync.stderr)")

        // retry: its note, then the pass (the file fails again).
        let retry = try await cli.run(["--log-format=json", "retry"])
        #expect(retry.status == 1, "\(retry.stderr)")
        let retryLines = Self.lines(retry.stderr, "retry")
        #expect(retryLines.contains { ($0["message"] as? String)?.hasPrefix("retrying 1 failed file(s)") == true && $0["files"] as? Int == 1 }, "\(retry.stderr)")

        // Each kind of error: a path the ledger does not know, a mistyped command, an unknown option, an unknown
        // destination, a config that cannot be found, a config with a mistake.
        let cases: [(arguments: [String], status: Int32, says: String)] = [
            (["status", "nosuch.txt"], 1, "nosuch.txt: not in the ledger"),
            (["statsu"], 64, "did you mean 'status'?"),
            (["sync", "--nosuch"], 64, "--nosuch"),
            (["ls", "--destination", "nowhere"], 64, "no destination named 'nowhere'"),
            (["--config", "missing.yaml", "validate"], 78, "missing.yaml: no such file"),
        ]
        for (arguments, status, says) in cases {
            let result = try await cli.run(["--log-format", "json"] + arguments)
            #expect(result.status == status, "\(arguments): \(result.stderr)")
            let lines = Self.lines(result.stderr, "\(arguments)")
            #expect(lines.count >= 1 && lines.allSatisfy { $0["level"] as? String == "error" }, "\(arguments): \(result.stderr)")
            #expect(lines.contains { ($0["message"] as? String)?.contains(says) == true }, "\(arguments): \(result.stderr)")
        }
        try dir.write("bad.yaml", Self.config + "\n    concurency: 2\n")
        let bad = try await cli.run(["--log-format", "json", "--config", "bad.yaml", "validate"])
        #expect(bad.status == 78)
        let badLines = Self.lines(bad.stderr, "validate")
        #expect(badLines.map { $0["message"] as? String } == ["bad.yaml:7:5: destinations[0].concurency: unknown key 'concurency'; did you mean 'concurrency'?"],
                "\(bad.stderr)")
        // The same commands in plain text write no JSON (the default is unchanged).
        let plain = try await cli.run(["status", "nosuch.txt"])
        #expect(plain.stderr.hasPrefix("syncgate: nosuch.txt: not in the ledger"), "\(plain.stderr)")
    }

    @Test func runLogsEveryOutcomeAndSumsUpBursts() async throws {
        defer { dir.remove() }
        try dir.write("plugins.yaml", Self.config)
        let count = 150
        for i in 0..<count { try dir.write("outbox/f\(i).txt", String(repeating: "x", count: i + 1)) }
        try dir.write("synced/sub", "a file where the folder should be")
        let log = dir.file("run.log")
        let gateway = try ProcessRunner.start(SyncgateCLI.binary, ["run", "-v", "--log-format", "json"], currentDirectory: dir.url, logFile: log)
        defer { if gateway.isRunning { kill(gateway.processIdentifier, SIGKILL) } }
        // Until every file is delivered (no time bound beyond the generous one).
        var deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            let delivered = (try? FileManager.default.contentsOfDirectory(atPath: dir.file("synced").path).filter { $0.hasPrefix("f") }.count) ?? 0
            if delivered == count { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        // Then, once the burst's second is surely over, a file that fails: its outcome has a line of its own.
        try await Task.sleep(for: .milliseconds(1500))
        try dir.write("outbox/sub/x.txt", "blocked")
        deadline = Date().addingTimeInterval(120)
        while Date() < deadline, !((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("sub/x.txt") {
            try await Task.sleep(for: .milliseconds(100))
        }
        kill(gateway.processIdentifier, SIGTERM)
        #expect(await ProcessRunner.waitForExit(gateway, timeout: 30))
        #expect(gateway.terminationStatus == 0)
        let lines = Self.lines(try String(contentsOf: log, encoding: .utf8), "run")

        // Each outcome is logged, alone or in a summary: together they make every file once.
        let delivered = lines.filter { ($0["message"] as? String)?.contains(": delivered (") == true }
        #expect(delivered.allSatisfy { $0["level"] as? String == "info" && $0["bytes"] is Int && $0["destination"] as? String == "archive" })
        let summaries = lines.filter { ($0["message"] as? String)?.contains("not logged one by one") == true }
        let summed = summaries.reduce(0) { $0 + ($1["delivered"] as? Int ?? 0) }
        #expect(delivered.count + summed == count, "\(delivered.count) lines + \(summed) summed up, \(summaries.count) summaries")
        #expect(summaries.allSatisfy { ($0["files"] as? Int ?? 0) > 0 })
        // At most 20 outcome lines per second: any second of log time holds those of two windows at most.
        let parser = ISO8601DateFormatter()
        parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let times = delivered.compactMap { ($0["time"] as? String).flatMap(parser.date(from:)) }
        #expect(times.count == delivered.count)
        let sorted = times.sorted()
        for (index, start) in sorted.enumerated() {
            let within = sorted[index...].prefix { $0.timeIntervalSince(start) < 1 }.count
            #expect(within <= 40, "\(within) outcome lines within a second from \(start)")
        }
        // The failure: a warning with its class and scope.
        let failure = lines.first { $0["path"] as? String == "sub/x.txt" && $0["level"] as? String == "warning" }
        #expect(failure?["class"] as? String == "permanent" && failure?["scope"] as? String == "file", "\(lines.filter { $0["path"] as? String == "sub/x.txt" })")
    }

    /// A destination that does not answer: `run` logs that it went away, once, as a warning with the failure's
    /// class and scope, and never the credentials it was given.
    @Test func runLogsADestinationGoingAway() async throws {
        defer { dir.remove() }
        let secret = "SecretKey/\(UUID().uuidString)"
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: bucket
                type: s3
                endpoint: http://127.0.0.1:1
                bucket: b
                region: us-east-1
                access_key_id: AKIDAWAYTEST
                secret_access_key: \(secret)
            """)
        try dir.write("outbox/a.txt", "alpha")
        try dir.write("outbox/b.txt", "bravo")
        let log = dir.file("run.log")
        let gateway = try ProcessRunner.start(SyncgateCLI.binary, ["run", "--log-format", "json"], currentDirectory: dir.url, logFile: log)
        defer { if gateway.isRunning { kill(gateway.processIdentifier, SIGKILL) } }
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline, !((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("\"state\":\"unavailable\"") {
            try await Task.sleep(for: .milliseconds(100))
        }
        kill(gateway.processIdentifier, SIGTERM)
        #expect(await ProcessRunner.waitForExit(gateway, timeout: 30))
        let text = try String(contentsOf: log, encoding: .utf8)
        #expect(!text.contains(secret))
        let lines = Self.lines(text, "run")
        let away = lines.filter { $0["state"] as? String == "unavailable" }
        #expect(away.count == 1, "two files wait, one line says the destination is away: \(text)")
        #expect(away.first?["level"] as? String == "warning" && away.first?["destination"] as? String == "bucket", "\(text)")
        #expect(away.first?["class"] as? String == "retryable" && away.first?["scope"] as? String == "destination", "\(text)")
    }
}
