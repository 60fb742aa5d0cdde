import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

@testable import SyncgateSheets

@Suite(
    "Apps Script web app mode", .serialized,
    .enabled(if: SheetsTestServer.shouldRun, "needs python3 with cryptography (scripts/test-deps.d/sheets.sh)"))
struct AppsScriptTests {
    func destination(_ server: SheetsTestServer, secret: String, dir: TemporaryDirectory) throws -> SheetsDestination {
        try SheetsFixtures.destination(
            "apps_script_url: \(server.appsScriptURL())\nsecret: \(secret)\ncolumns: [id, name]", base: dir.url)
    }

    @Test func postsFollowsThe302WithAGetAndReadsOk() async throws {
        let server = try await SheetsTestServer(appsScriptSecret: "tracker-secret-1")
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-script")
        defer { dir.remove() }
        let destination = try destination(server, secret: "tracker-secret-1", dir: dir)
        try dir.write("people.csv", "name,id\nada,1\nalan,2\n")
        let item = try SheetsFixtures.item(dir, "people.csv")
        let receipt = try await destination.upload(item) { _ in }
        #expect(receipt.detail == "Sheet1!A2:C3")  // below the header the script wrote
        let rows = try server.textRows(spreadsheet: "apps-script-AKfycbTEST")
        #expect(rows.map { Array($0.dropFirst()) } == [["id", "name"], ["1", "ada"], ["2", "alan"]])
        #expect(rows.first?.first == "syncgate_row_id")
        #expect(rows.dropFirst().allSatisfy { $0[0].hasPrefix("people.csv@") && $0[0].hasSuffix("#1") })
        // A second post of the same rows is deduplicated by the script on the row ids.
        let again = try await destination.upload(item) { _ in }
        #expect(again.detail == "0 rows via Apps Script (2 rows already present)")
        #expect(try server.stats()["apps_script_posts"] == 2)
        await destination.finish()
    }

    @Test func okFalseAndHTMLPagesAreFailures() async throws {
        let server = try await SheetsTestServer(appsScriptSecret: "right-secret")
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-script")
        defer { dir.remove() }
        try dir.write("p.csv", "id,name\n1,x\n")
        let item = try SheetsFixtures.item(dir, "p.csv")

        let wrong = try destination(server, secret: "wrong-secret", dir: dir)
        let refused = await SheetsFixtures.uploadError(wrong, item)
        #expect(refused?.classification == Classification(.permanent, scope: .file))
        #expect(refused?.message == "Apps Script refused the rows: bad secret")
        #expect(refused.map { "\($0)" }?.contains("wrong-secret") == false)
        await wrong.finish()

        let right = try destination(server, secret: "right-secret", dir: dir)
        try server.fault(["kind": "apps_script_html"])
        let html = await SheetsFixtures.uploadError(right, item)
        #expect(html?.classification == Classification(.permanent, scope: .destination))  // blocked
        #expect(html?.code == "apps-script-html")
        #expect(html?.message.contains("TypeError: Cannot read properties of undefined") == true)
        try server.fault(["kind": "apps_script_not_ok", "message": "sheet is protected"])
        let notOK = await SheetsFixtures.uploadError(right, item)
        #expect(notOK?.message == "Apps Script refused the rows: sheet is protected")
        #expect(try server.rows(spreadsheet: "apps-script-AKfycbTEST").isEmpty)

        // Output lost after the script ran: retryable; the retry does not add the rows twice.
        try server.fault(["kind": "drop_echo"])
        let lost = await SheetsFixtures.uploadError(right, item)
        #expect(lost?.classification == Classification(.retryable(), scope: .file))
        #expect(try server.rows(spreadsheet: "apps-script-AKfycbTEST").count == 2)  // the header, the row
        _ = try await right.upload(item) { _ in }
        #expect(try server.rows(spreadsheet: "apps-script-AKfycbTEST").count == 2)
        await right.finish()
    }

    @Test func rePostingToTheEchoURLIsNotWhatTheClientDoes() async throws {
        // The echo URL answers a POST with 405 (as Google does); the client must use GET there.
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let post = try SheetsTestServer.request(
            port: server.port, method: "POST", path: "/macros/s/X/exec", headers: ["Content-Type": "application/json"],
            body: Data("{\"rows\":[[\"k\",1]]}".utf8))
        #expect(post.status == 302)
        let location = try #require(post.headers["location"])
        let path = String(location.dropFirst(server.baseURL.count))
        let wrong = try SheetsTestServer.request(port: server.port, method: "POST", path: path)
        #expect(wrong.status == 405)
        let post2 = try SheetsTestServer.request(port: server.port, method: "POST", path: "/macros/s/X/exec", body: Data("{\"rows\":[[\"k2\",1]]}".utf8))
        let right = try SheetsTestServer.request(port: server.port, method: "GET", path: String(post2.headers["location"]!.dropFirst(server.baseURL.count)))
        #expect(right.status == 200)
        #expect(right.text.contains("\"ok\": true"))
    }
}
