import Foundation
import SyncgateTestSupport
import Testing

/// The real `syncgate` binary syncing to the loopback Sheets server.
@Suite(
    "syncgate binary to the loopback Sheets server", .serialized,
    .enabled(if: SheetsTestServer.shouldRun, "needs python3 with cryptography (scripts/test-deps.d/sheets.sh)"))
struct SheetsCLITests {
    let dir: TemporaryDirectory

    init() throws { dir = try TemporaryDirectory("sg-sheets-cli") }

    func writeConfig(_ server: SheetsTestServer, spreadsheet: String = "test-spreadsheet", extra: String = "", retry: String = "{ file: 3, base_delay: 10ms, max_delay: 50ms }", concurrency: Int = 2) throws {
        try dir.write("plugins.yaml", """
            version: 1
            state: .syncgate/state.sqlite
            sources:
              - name: outbox
                path: outbox
            destinations:
              - name: builds-sheet
                type: sheets
                spreadsheet_id: \(spreadsheet)
                credentials_file: \(server.keyFile.path)
                api_base: \(server.baseURL)
                concurrency: \(concurrency)
                retry: \(retry)
            \(extra.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
            routes:
              - match: ["**/*"]
                to: [builds-sheet]
            """)
    }

    func run(_ arguments: [String], timeout: TimeInterval = 120) async throws -> ProcessResult {
        try await ProcessRunner.run(TestPaths.executable("syncgate"), arguments + ["--config", "plugins.yaml"], currentDirectory: dir.url, timeout: timeout)
    }

    func events(_ result: ProcessResult) -> [[String: Any]] {
        result.stdout.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    func status() async throws -> [String: Any] {
        let result = try await run(["status", "--json"])
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    @Test func csvAndNDJSONRecordsLandInOrder() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer()
        defer { server.stop() }
        try writeConfig(server, extra: "range: \"Builds!A:D\"\ncolumns: [build_id, version, status]\nkey: build_id\nmax_rows_per_request: 2")
        try dir.write("outbox/2026/builds.csv", "build_id,status,version\n1,ok,1.0\n2,\"failed, flaky\",1.1\n3,ok,1.2\n4,ok,1.3\n5,ok,1.4\n")
        try dir.write("outbox/events.ndjson", "{\"build_id\": 10, \"version\": \"2.0\", \"status\": \"ok\"}\n{\"build_id\": 11, \"version\": \"2.1\"}\n{\"status\": \"ok\", \"build_id\": 12, \"version\": \"2.2\"}\n")
        var result = try await run(["sync", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        var rows = try server.textRows(sheet: "Builds")
        #expect(rows.first == ["build_id", "version", "status"])  // the header syncgate wrote, once
        rows.removeFirst()
        #expect(rows.count == 8)
        // Each file's records in file order (files may interleave: they sync concurrently).
        #expect(rows.filter { Int($0[0])! < 10 } == [["1", "1.0", "ok"], ["2", "1.1", "failed, flaky"], ["3", "1.2", "ok"], ["4", "1.3", "ok"], ["5", "1.4", "ok"]])
        #expect(rows.filter { Int($0[0])! >= 10 } == [["10", "2.0", "ok"], ["11", "2.1", ""], ["12", "2.2", "ok"]])  // a missing member is an empty cell
        let synced = events(result).filter { $0["event"] as? String == "synced" }
        let csvDetail = synced.first { $0["path"] as? String == "2026/builds.csv" }?["detail"] as? String
        #expect(csvDetail?.split(separator: ";").count == 3)  // 5 rows in batches of 2
        #expect(csvDetail?.hasPrefix("Builds!A") == true)

        // Nothing changed: nothing is sent. A touched file (same content, new mtime) adds no rows either.
        result = try await run(["sync", "--json"])
        #expect(result.status == 0)
        try dir.write("outbox/events.ndjson", "{\"build_id\": 10, \"version\": \"2.0\", \"status\": \"ok\"}\n{\"build_id\": 11, \"version\": \"2.1\"}\n{\"status\": \"ok\", \"build_id\": 12, \"version\": \"2.2\"}\n{\"build_id\": 13, \"version\": \"2.3\"}\n")
        result = try await run(["sync", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let after = try server.textRows(sheet: "Builds")
        #expect(after.count == 10)
        #expect(after.last == ["13", "2.3", ""])
    }

    @Test func droppedAnswerThenRetryLeavesNoDuplicates() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer()
        defer { server.stop() }
        try writeConfig(server, extra: "max_rows_per_request: 4", concurrency: 1)
        var csv = "n,word\n"
        for i in 1...10 { csv += "\(i),w\(i)\n" }
        try dir.write("outbox/numbers.csv", csv)
        // After the header, the second append (rows 5-8) is applied, then its answer is lost.
        try server.fault(["kind": "drop_after_append", "count": 1, "skip": 2])
        let result = try await run(["sync", "--json"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let all = events(result)
        let retrying = all.filter { $0["event"] as? String == "retrying" }
        #expect(retrying.count == 1)
        let synced = try #require(all.first { $0["event"] as? String == "synced" })
        #expect(synced["attempts"] as? Int == 2)
        #expect((synced["detail"] as? String)?.hasSuffix("(8 rows already present)") == true)
        let rows = try server.textRows().dropFirst()
        #expect(rows.map { $0[1] } == (1...10).map(String.init))
        #expect(Set(rows.map { $0[0] }).count == 10)
        let stats = try server.stats()
        #expect(stats["dropped"] == 1)
        #expect(stats["appends"] == 4)  // the header, 1-4, 5-8 (dropped), then only 9-10
        #expect(stats["gets"] == 3)  // the header row; the key column once per run, once more before re-sending
    }

    @Test func burstOf200FilesStaysUnderTheQuota() async throws {
        defer { dir.remove() }
        // Server quota: 25 writes per second; the destination keeps to 20 per second.
        let server = try await SheetsTestServer(writeQuota: 25, quotaWindow: 1, retryAfter: 1)
        defer { server.stop() }
        try writeConfig(server, extra: "rows: file\nwrites_per_minute: 20\nwrite_window: 1s", concurrency: 8)
        for i in 0..<200 { try dir.write("outbox/batch/f\(String(format: "%03d", i)).bin", "payload \(i)") }
        let started = Date()
        let result = try await run(["sync", "--json"], timeout: 150)
        let elapsed = Date().timeIntervalSince(started)
        #expect(result.status == 0, "\(result.stderr)")
        let summary = events(result).last { $0["event"] as? String == "summary" }
        #expect(summary?["uploaded"] as? Int == 200)
        #expect(!events(result).contains { $0["event"] as? String == "retrying" })
        let stats = try server.stats()
        #expect(stats["quota_429"] == 0)
        #expect(stats["appends"] == 201)  // the header, then one per file
        #expect((stats["max_writes_in_window"] ?? 99) <= 25)
        #expect(elapsed >= 8)  // 200 writes at 20 per second cannot take less than ~9 seconds
        let names = try server.textRows().dropFirst().map { $0[1] }
        #expect(Set(names).count == 200)
    }

    @Test func quota429IsRetriedAfterRetryAfter() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer()
        defer { server.stop() }
        try writeConfig(server, extra: "rows: file")
        try dir.write("outbox/a.bin", "a")
        try server.fault(["kind": "status", "status": 429, "count": 1, "retry_after": 1, "method": "POST"])
        let started = Date()
        let result = try await run(["sync", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Date().timeIntervalSince(started) >= 1)  // Retry-After honoured over the 10ms backoff
        let retrying = events(result).filter { $0["event"] as? String == "retrying" }
        #expect(retrying.count == 1)
        #expect(try server.rows().count == 2)  // the header, the row
    }

    @Test func permanent403BlocksTheDestinationWithGooglesMessageInStatus() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer(forbidden: ["locked-sheet"])
        defer { server.stop() }
        try writeConfig(server, spreadsheet: "locked-sheet")
        try dir.write("outbox/a.csv", "x\n1\n")
        try dir.write("outbox/bad.ndjson", "{\"x\": 1}\n{\"x\": 2\n")
        let result = try await run(["sync", "--json"])
        #expect(result.status == 1, "\(result.stderr)")
        // The sheet refuses the service account: the destination is blocked, the file waits for it. The malformed
        // file fails on its own if it was read before the refusal, or waits with the other one.
        let failed = events(result).filter { $0["event"] as? String == "failed" }
        #expect(failed.allSatisfy { $0["path"] as? String == "bad.ndjson" && $0["class"] as? String == "permanent" }, "\(failed)")
        #expect(events(result).contains { $0["event"] as? String == "waiting" && $0["path"] as? String == "a.csv" })
        let report = try await status()
        let destination = try #require((report["destinations"] as? [[String: Any]])?.first)
        #expect(destination["state"] as? String == "blocked")
        #expect((destination["last_error"] as? String)?.contains("HTTP 403 PERMISSION_DENIED: The caller does not have permission") == true, "\(destination)")
        let files = try #require(report["files"] as? [[String: Any]])
        let denied = try #require(files.first { $0["path"] as? String == "a.csv" })
        #expect(denied["status"] as? String == "pending")
        if let malformed = files.first(where: { $0["path"] as? String == "bad.ndjson" }), malformed["status"] as? String == "failed" {
            #expect((malformed["last_error"] as? String)?.contains("bad.ndjson: line 2: invalid JSON") == true)
        }
        // The key never leaks into output or status.
        let key = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: server.keyFile)) as? [String: Any])
        let pemLine = try #require((key["private_key"] as? String)?.split(separator: "\n").dropFirst().first)
        let statusText = try await run(["status", "--json"]).stdout
        #expect(!statusText.contains(pemLine) && !result.output.contains(pemLine))
        #expect(!result.output.contains("ya29."))
        #expect(try server.stats()["appends"] == 0)
    }

    @Test func exampleConfigRunsAgainstTheServer() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer(appsScriptSecret: "local-test-secret")
        defer { server.stop() }
        var text = try String(contentsOf: TestPaths.packageRoot.appendingPathComponent("examples/sheets.yaml"), encoding: .utf8)
        text = text.replacingOccurrences(of: "127.0.0.1:8089", with: "127.0.0.1:\(server.port)")
            .replacingOccurrences(of: "/tmp/syncgate-sheets-key.json", with: server.keyFile.path)
            .replacingOccurrences(of: "state: ../.syncgate/sheets-example.sqlite", with: "state: state.sqlite")
            .replacingOccurrences(of: "path: sheets-outbox", with: "path: \(TestPaths.packageRoot.appendingPathComponent("examples/sheets-outbox").path)")
        try dir.write("plugins.yaml", text)
        let result = try await ProcessRunner.run(
            TestPaths.executable("syncgate"), ["sync", "--json", "--config", "plugins.yaml"], environment: ["TRACKER_SECRET": "local-test-secret"],
            currentDirectory: dir.url)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        // Each with the header written into the empty sheet.
        #expect(try server.textRows(sheet: "Builds").first == ["build_id", "version", "status", "date"])
        #expect(try server.rows(sheet: "Builds").count == 6)
        #expect(try server.rows(spreadsheet: "apps-script-AKfycbEXAMPLE").count == 3)
    }
}
