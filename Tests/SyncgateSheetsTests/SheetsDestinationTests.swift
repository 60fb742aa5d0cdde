import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

@testable import SyncgateSheets

/// The destination driven directly against the loopback Sheets server (real sockets, real OAuth exchange).
@Suite(
    "Sheets destination against the loopback server", .serialized,
    .enabled(if: SheetsTestServer.shouldRun, "needs python3 with cryptography (scripts/test-deps.d/sheets.sh)"))
struct SheetsDestinationTests {
    @Test func csvRecordsLandInOrderOnceWithTheirRange() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-dest")
        defer { dir.remove() }
        let destination = try SheetsFixtures.apiDestination(server, extra: "range: \"Builds!A:E\"", base: dir.url)
        try dir.write("builds.csv", "build_id,version,status\n101,1.0,ok\n102,\"1.1, beta\",failed\n103,2.0,ok\n")
        let item = try SheetsFixtures.item(dir, "builds.csv")
        let progress = ProgressLog()
        let receipt = try await destination.upload(item) { progress.add($0) }
        #expect(receipt.remoteName == "builds.csv")
        #expect(receipt.detail == "Builds!A2:D4")  // below the header syncgate wrote into the empty sheet
        #expect(progress.values.last == item.size)
        let rows = try server.textRows(sheet: "Builds")
        #expect(rows.map { Array($0.dropFirst()) } == [
            ["build_id", "version", "status"], ["101", "1.0", "ok"], ["102", "1.1, beta", "failed"], ["103", "2.0", "ok"],
        ])
        #expect(rows.first?.first == "syncgate_row_id")
        // Each id: the file, the record's own hash, its occurrence.
        for row in rows.dropFirst() {
            #expect(row[0].hasPrefix("builds.csv@") && row[0].hasSuffix("#1") && row[0].count == "builds.csv@".count + 16 + 2)
        }
        #expect(Set(rows.map(\.[0])).count == 4)
        // The same file again (the ledger lost, a re-run): nothing is appended twice.
        let again = try await destination.upload(item) { _ in }
        #expect(again.detail == "no new rows (3 already present)")
        #expect(try server.rows(sheet: "Builds").count == 4)
        let stats = try server.stats()
        #expect(stats["appends"] == 2)  // the header, the rows
        #expect(stats["tokens"] == 1)  // the token is cached
        #expect(stats["gets"] == 2)  // the header row and the key column, once per run
        let listing = try await destination.list()
        #expect(listing.names == ["builds.csv"])
        await destination.finish()
    }

    @Test func ndjsonAndJSONWithConfiguredColumnsAndKey() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-dest")
        defer { dir.remove() }
        let destination = try SheetsFixtures.apiDestination(
            server, extra: "range: \"Builds!A:D\"\ncolumns: [build_id, version, status]\nkey: build_id\nvalue_input: RAW", base: dir.url)
        try dir.write("a.ndjson", "{\"build_id\": 7, \"status\": \"ok\", \"version\": \"1.0\", \"extra\": 1}\n{\"version\":\"1.1\",\"build_id\":8,\"status\":true}\n")
        try dir.write("b.json", "[{\"build_id\": 8, \"version\": \"dup\"}, {\"build_id\": 9, \"version\": {\"major\": 2}}]")
        _ = try await destination.upload(try SheetsFixtures.item(dir, "a.ndjson")) { _ in }
        let second = try await destination.upload(try SheetsFixtures.item(dir, "b.json")) { _ in }
        #expect(second.detail == "Builds!A4:C4 (1 rows already present)")
        #expect(try server.textRows(sheet: "Builds") == [
            ["build_id", "version", "status"],
            ["7", "1.0", "ok"],
            ["8", "1.1", "true"],
            ["9", "{\"major\":2}", ""],
        ])
        // Numbers go as JSON numbers, booleans as booleans (RAW keeps them typed).
        let log = try server.requestLog().filter { ($0["methodId"] as? String) == "sheets.spreadsheets.values.append" }
        #expect(log.count == 3)  // the header, then one append per file
        let firstBody = try #require(log.dropFirst().first?["request"] as? [String: Any])
        let values = try #require(firstBody["values"] as? [[Any]])
        #expect((values[0][0] as? NSNumber)?.intValue == 7)
        #expect((log.first?["query"] as? [String: String])?["valueInputOption"] == "RAW")
        await destination.finish()
    }

    @Test func droppedResponseThenRetryLeavesNoDuplicates() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-dest")
        defer { dir.remove() }
        let destination = try SheetsFixtures.apiDestination(server, extra: "max_rows_per_request: 3", base: dir.url)
        var csv = "n\n"
        for i in 1...10 { csv += "\(i)\n" }
        try dir.write("ten.csv", csv)
        let item = try SheetsFixtures.item(dir, "ten.csv")
        // The header and the first batch go through; the second is applied, then its answer is lost.
        try server.fault(["kind": "drop_after_append", "count": 1, "skip": 2])
        let error = await SheetsFixtures.uploadError(destination, item)
        #expect(error?.failureClass.isRetryable == true)
        #expect(error?.message.contains("checked before they are sent again") == true)
        #expect(try server.rows().count == 7)  // the header; the server did apply the second batch
        // The core retries the upload: the key column is read afresh and only missing rows go.
        let receipt = try await destination.upload(item) { _ in }
        let rows = try server.textRows().dropFirst()
        #expect(rows.map { $0[1] } == (1...10).map(String.init))
        #expect(Set(rows.map { $0[0] }).count == 10)
        #expect(receipt.detail == "Sheet1!A8:B10;Sheet1!A11:B11 (6 rows already present)")
        #expect(try server.stats()["dropped"] == 1)
        await destination.finish()
    }

    /// A fleet's leader that lost the lead and took it again (a new epoch) forgets what it knew of the key column:
    /// another leader may have appended rows meanwhile, among them rows of a file whose outcome this one must now
    /// settle. The same epoch again reads nothing.
    @Test func aNewLeadEpochReadsTheKeyColumnAfresh() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-dest")
        defer { dir.remove() }
        let first = try SheetsFixtures.apiDestination(server, extra: "rows: file", base: dir.url)
        let other = try SheetsFixtures.apiDestination(server, extra: "rows: file", base: dir.url)
        try dir.write("a.txt", "a")
        try dir.write("b.txt", "b")
        try dir.write("c.txt", "c")
        await first.writesUnderLead(epoch: 1)
        _ = try await first.upload(try SheetsFixtures.item(dir, "a.txt")) { _ in }
        #expect(await first.dedup.reads == 1)
        // Another leader (epoch 2) appends b's row, and its answer is lost to the ledger.
        await other.writesUnderLead(epoch: 2)
        _ = try await other.upload(try SheetsFixtures.item(dir, "b.txt")) { _ in }
        // The first takes the lead again (epoch 3) and settles b: the key column is read afresh, b's row is there.
        await first.writesUnderLead(epoch: 3)
        let receipt = try await first.upload(try SheetsFixtures.item(dir, "b.txt")) { _ in }
        #expect(receipt.detail?.contains("already present") == true, "\(receipt.detail ?? "")")
        #expect(await first.dedup.reads == 2)
        // The same epoch: what is known stays good.
        await first.writesUnderLead(epoch: 3)
        _ = try await first.upload(try SheetsFixtures.item(dir, "c.txt")) { _ in }
        #expect(await first.dedup.reads == 2)
        let names = try server.textRows().dropFirst().map { $0[1] }
        #expect(names.sorted() == ["a.txt", "b.txt", "c.txt"], "\(names)")
        await first.finish()
        await other.finish()
    }

    @Test func timedOutOrCancelledAppendIsCheckedBeforeResending() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-dest")
        defer { dir.remove() }
        let destination = try SheetsFixtures.apiDestination(server, extra: "request_timeout: 500ms", base: dir.url)
        try dir.write("slow.csv", "n\n1\n2\n")
        try dir.write("cancelled.csv", "n\n3\n4\n")
        // The sheet has its header already, so that every append here is one of rows.
        try server.setRows([["syncgate_row_id", "n"]])
        // Applied, but answered only after the client gave up (10 s against a 500 ms timeout: a loaded machine can
        // run the client's timer late, and an answer after 1.5 s once came first).
        try server.fault(["kind": "delay_after_append", "seconds": 10.0])
        let slow = try SheetsFixtures.item(dir, "slow.csv")
        let timedOut = await SheetsFixtures.uploadError(destination, slow)
        #expect(timedOut?.failureClass.isRetryable == true)
        _ = try await destination.upload(slow) { _ in }
        // Cancelled while the request is out (the core's attempt timeout, Ctrl-C): once the server has applied the
        // append and holds its answer back (acting on what the server saw, not after a fixed delay, which a
        // loaded machine can stretch past the server's delay).
        try server.fault(["kind": "delay_after_append", "seconds": 3.0])
        let cancelled = try SheetsFixtures.item(dir, "cancelled.csv")
        let task = Task { try await destination.upload(cancelled) { _ in } }
        let deadline = ContinuousClock.now + .seconds(20)
        while try server.stats()["appends"] ?? 0 < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        task.cancel()
        #expect(await (try? task.value) == nil)
        _ = try await destination.upload(cancelled) { _ in }
        #expect(try server.textRows().map { $0[1] } == ["n", "1", "2", "3", "4"])
        #expect(try server.stats()["appends"] == 2)  // one per file
        await destination.finish()
    }

    @Test func formulaLikeFileNamesStayTextInTheRowID() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-dest")
        defer { dir.remove() }
        let destination = try SheetsFixtures.apiDestination(server, base: dir.url)
        try dir.write("=SUM(A1).csv", "n\n1\n")
        let item = try SheetsFixtures.item(dir, "=SUM(A1).csv")
        _ = try await destination.upload(item) { _ in }
        let sent = try server.requestLog().last { ($0["methodId"] as? String) == "sheets.spreadsheets.values.append" }
        let values = (sent?["request"] as? [String: Any])?["values"] as? [[Any]]
        #expect((values?.first?.first as? String)?.hasPrefix("'=SUM(A1).csv@") == true)
        #expect(try server.textRows().dropFirst().first?.first?.hasPrefix("=SUM(A1).csv@") == true)
        // Recognised as present when sent again.
        let again = try await destination.upload(item) { _ in }
        #expect(again.detail == "no new rows (1 already present)")
        await destination.finish()
    }

    @Test func concurrentCallersShareOneTokenExchange() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let transport = HTTPTransport()
        let provider = OAuthTokenProvider(credentialsPath: server.keyFile.path, transport: transport, timeout: .seconds(10))
        let tokens = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<12 { group.addTask { try await provider.token().value.reveal() } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(tokens.count == 1)
        #expect(tokens.first?.hasPrefix("ya29.") == true)
        #expect(try server.stats()["tokens"] == 1)
        #expect(await provider.exchanges == 1)
        // The token is a registered secret: scrubbed from any text.
        #expect(Redactor.shared.redact("Bearer \(tokens.first!)") == "Bearer <redacted>")
        await transport.shutdown()
    }

    @Test func aFileWithoutRecordsSendsNothing() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-dest")
        defer { dir.remove() }
        let destination = try SheetsFixtures.apiDestination(server, base: dir.url)
        try dir.write("header-only.csv", "a,b\n")
        try dir.write("empty.ndjson", "")
        #expect(try await destination.upload(try SheetsFixtures.item(dir, "header-only.csv")) { _ in }.detail == "no records in the file")
        #expect(try await destination.upload(try SheetsFixtures.item(dir, "empty.ndjson")) { _ in }.detail == "no records in the file")
        #expect(try server.stats()["appends"] == 0)
        await destination.finish()
    }

    @Test func expiredTokenIsRefreshedOnceOn401() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-dest")
        defer { dir.remove() }
        let destination = try SheetsFixtures.apiDestination(server, extra: "rows: file", base: dir.url)
        try dir.write("one.bin", "1")
        try dir.write("two.bin", "22")
        _ = try await destination.upload(try SheetsFixtures.item(dir, "one.bin")) { _ in }
        try server.expireTokens()  // the cached token is now refused with 401
        _ = try await destination.upload(try SheetsFixtures.item(dir, "two.bin")) { _ in }
        let stats = try server.stats()
        #expect(stats["tokens"] == 2)
        #expect(stats["unauthorized"] == 1)
        let rows = Array(try server.textRows().dropFirst())  // below the header
        #expect(rows.map { $0[1] } == ["one.bin", "two.bin"])
        #expect(rows[1][2] == "2")  // size
        #expect(rows[1][3] == (try SheetsFixtures.sha256(of: dir.file("two.bin"))))
        #expect(rows[1][5] == "inbox")
        await destination.finish()
    }

    @Test func shortLivedTokensAreRenewedBeforeExpiry() async throws {
        // Tokens live 30 s and are replaced 15 s before they expire: an upload would have to take 15 s between its
        // token check and the server to be refused (with 8 s tokens, a fresh clone's full run once took past 4 s).
        let server = try await SheetsTestServer(tokenTTL: 30)
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-dest")
        defer { dir.remove() }
        let destination = try SheetsFixtures.apiDestination(server, extra: "rows: file", base: dir.url)
        try dir.write("a.bin", "a")
        try dir.write("b.bin", "b")
        _ = try await destination.upload(try SheetsFixtures.item(dir, "a.bin")) { _ in }
        try await Task.sleep(for: .milliseconds(15300))  // past expiry minus the margin (half of 30 s)
        _ = try await destination.upload(try SheetsFixtures.item(dir, "b.bin")) { _ in }
        let stats = try server.stats()
        // At least one renewal (more when a loaded machine stretches an upload past the token's usable second;
        // exactly 2 failed that way with the other suites running), and never a token the server refused.
        #expect((stats["tokens"] ?? 0) >= 2)
        #expect(stats["unauthorized"] == 0)  // renewed before the server refused it
        await destination.finish()
    }

    @Test func quotaThrottlesAnd503IsRetryable() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-dest")
        defer { dir.remove() }
        let destination = try SheetsFixtures.apiDestination(server, extra: "rows: file", base: dir.url)
        try dir.write("a.bin", "a")
        let item = try SheetsFixtures.item(dir, "a.bin")
        try server.fault(["kind": "status", "status": 429, "count": 1, "retry_after": 7, "method": "POST",
                          "message": "Quota exceeded for quota metric 'Write requests'"])
        let quota = await SheetsFixtures.uploadError(destination, item)
        #expect(quota?.classification == Classification(.deferred(after: .seconds(7)), scope: .destination))
        #expect(quota?.code == "RESOURCE_EXHAUSTED")
        #expect(quota?.message.contains("Quota exceeded for quota metric 'Write requests'") == true)
        try server.fault(["kind": "status", "status": 503, "count": 1, "method": "POST"])
        let unavailable = await SheetsFixtures.uploadError(destination, item)
        #expect(unavailable?.classification == Classification(.retryable(), scope: .file))
        #expect(unavailable?.code == "UNAVAILABLE")
        _ = try await destination.upload(item) { _ in }
        #expect(try server.rows().count == 2)  // the header, the row
        await destination.finish()
    }

    @Test func permissionAndNotFoundBlockTheDestinationWithGooglesMessage() async throws {
        let server = try await SheetsTestServer(forbidden: ["locked"])
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-dest")
        defer { dir.remove() }
        try dir.write("a.csv", "x\n1\n")
        let item = try SheetsFixtures.item(dir, "a.csv")
        for (id, status, text) in [("locked", "PERMISSION_DENIED", "The caller does not have permission"), ("missing", "NOT_FOUND", "Requested entity was not found.")] {
            let destination = try SheetsFixtures.destination(
                "spreadsheet_id: \(id)\ncredentials_file: \(server.keyFile.path)\napi_base: \(server.baseURL)", base: dir.url)
            let error = await SheetsFixtures.uploadError(destination, item)
            #expect(error?.classification == Classification(.permanent, scope: .destination))
            #expect(error?.code == status)
            #expect(error?.message.contains(text) == true)
            await destination.finish()
        }
        // A range the sheet cannot parse (the configured tab is missing) blocks the destination too.
        try server.fault(["kind": "status", "status": 400, "count": 1, "message": "Unable to parse range: Nope!!"])
        let destination = try SheetsFixtures.apiDestination(server, base: dir.url)
        let invalid = await SheetsFixtures.uploadError(destination, item)
        #expect(invalid?.classification == Classification(.permanent, scope: .destination))
        #expect(invalid?.code == "INVALID_ARGUMENT")
        #expect(invalid?.message.contains("Unable to parse range: Nope!!") == true)
        // A 400 about the rows of an append fails that file only.
        try server.fault(["kind": "status", "status": 400, "count": 1, "method": "POST", "message": "Invalid values[0][1]: struct_value"])
        let data = await SheetsFixtures.uploadError(destination, item)
        #expect(data?.classification == Classification(.permanent, scope: .file))
        #expect(data?.message.contains("Invalid values[0][1]") == true)
        #expect(try server.rows().isEmpty)
        await destination.finish()
    }

    @Test func malformedRecordFailsTheFileWithItsLineAndSendsNothing() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-dest")
        defer { dir.remove() }
        let destination = try SheetsFixtures.apiDestination(server, extra: "max_rows_per_request: 1", base: dir.url)
        try dir.write("bad.csv", "a,b\n1,2\n3,4\n5,\"6\n")
        try dir.write("bad.ndjson", "{\"a\":1}\n{\"a\":2}\n{\"a\":3,,}\n")
        try dir.write("notes.txt", "hello")
        let csv = await SheetsFixtures.uploadError(destination, try SheetsFixtures.item(dir, "bad.csv"))
        #expect(csv?.failureClass == .permanent)
        #expect(csv?.message.hasPrefix("bad.csv: line 4: a quoted field is never closed") == true)
        let nd = await SheetsFixtures.uploadError(destination, try SheetsFixtures.item(dir, "bad.ndjson"))
        #expect(nd?.message.hasPrefix("bad.ndjson: line 3: invalid JSON") == true)
        let txt = await SheetsFixtures.uploadError(destination, try SheetsFixtures.item(dir, "notes.txt"))
        #expect(txt?.code == "unsupported-format")
        #expect(try server.rows().isEmpty)
        #expect(try server.stats()["appends"] == 0)
        await destination.finish()
    }

    @Test func writesStayUnderTheConfiguredQuota() async throws {
        // The server allows 6 writes per second; the destination is configured for 5 per second.
        let server = try await SheetsTestServer(writeQuota: 6, quotaWindow: 1)
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-dest")
        defer { dir.remove() }
        let destination = try SheetsFixtures.apiDestination(server, extra: "rows: file\nwrites_per_minute: 5\nwrite_window: 1s", base: dir.url)
        var items: [UploadItem] = []
        for i in 0..<16 {
            try dir.write("f\(i).bin", "\(i)")
            items.append(try SheetsFixtures.item(dir, "f\(i).bin"))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for item in items { group.addTask { _ = try await destination.upload(item) { _ in } } }
            try await group.waitForAll()
        }
        let stats = try server.stats()
        #expect(stats["quota_429"] == 0)
        #expect(stats["appends"] == 17)  // the header, once, then one per file
        #expect((stats["max_writes_in_window"] ?? 99) <= 6)
        #expect(await destination.limiter.waits > 0)
        #expect(try server.rows().count == 17)
        await destination.finish()
    }

    @Test func secretsNeverAppearInErrors() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-dest")
        defer { dir.remove() }
        // A key for the right account but not the one the server knows: the token endpoint refuses the JWT.
        let keyJSON = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: server.keyFile)) as? [String: Any])
        let other = try await SheetsTestServer()
        defer { other.stop() }
        var forged = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: other.keyFile)) as? [String: Any])
        forged["token_uri"] = keyJSON["token_uri"]
        forged["private_key_id"] = keyJSON["private_key_id"]
        let forgedURL = try dir.write("forged.json", try JSONSerialization.data(withJSONObject: forged))
        let destination = try SheetsFixtures.destination(
            "spreadsheet_id: test-spreadsheet\ncredentials_file: \(forgedURL.path)\napi_base: \(server.baseURL)", base: dir.url)
        try dir.write("a.csv", "x\n1\n")
        let error = await SheetsFixtures.uploadError(destination, try SheetsFixtures.item(dir, "a.csv"))
        #expect(error?.classification == Classification(.permanent, scope: .destination))  // blocked
        #expect(error?.code == "invalid_grant")
        #expect(error?.message.contains("Invalid JWT Signature.") == true)
        let pem = try #require(forged["private_key"] as? String)
        let body = pem.split(separator: "\n")[1]
        #expect(error.map { "\($0)" }?.contains(body) == false)
        #expect(try server.stats()["rejected_tokens"] == 1)
        await destination.finish()
    }
}

/// Collects progress callbacks.
final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [Int64] = []
    func add(_ value: Int64) {
        lock.lock()
        list.append(value)
        lock.unlock()
    }
    var values: [Int64] {
        lock.lock()
        defer { lock.unlock() }
        return list
    }
}
