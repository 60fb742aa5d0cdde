import Foundation
import SyncgateCore
import SyncgateJSON
import SyncgateTestSupport
import Testing

@testable import SyncgateSheets

/// The header row: columns mapped onto an existing header by name, a header written into an empty sheet, a
/// column the header lacks refused for the destination; and formula-like text kept as text (issue 18).
@Suite(
    "Sheets header and formula safety against the loopback server", .serialized,
    .enabled(if: SheetsTestServer.shouldRun, "needs python3 with cryptography (scripts/test-deps.d/sheets.sh)"))
struct SheetsHeaderTests {
    static let buildColumns = "columns: [build_id, version, status, date]"
    static let builds = "build_id,version,status,date\n1041,1.2,passed,2024-05-01\n1042,1.3,failed,2024-05-02\n"

    /// The values.append requests the server received, as their `values`.
    static func appendedValues(_ server: SheetsTestServer) throws -> [[[Any]]] {
        try server.requestLog()
            .filter { ($0["methodId"] as? String) == "sheets.spreadsheets.values.append" }
            .compactMap { ($0["request"] as? [String: Any])?["values"] as? [[Any]] }
    }

    @Test func anExistingHeaderInAnotherOrderIsFollowedByName() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-header")
        defer { dir.remove() }
        // Typed by hand, in another order than `columns`, with the row-id column in the middle and a column
        // syncgate does not fill.
        let header = ["status", "date", "syncgate_row_id", "notes", "build_id", "version"]
        try server.setRows([header], sheet: "Builds")
        try dir.write("builds.csv", SheetsHeaderTests.builds)
        let destination = try SheetsFixtures.apiDestination(
            server, extra: "range: \"Builds!A:H\"\n\(SheetsHeaderTests.buildColumns)", base: dir.url)
        let receipt = try await destination.upload(try SheetsFixtures.item(dir, "builds.csv")) { _ in }
        #expect(receipt.detail == "Builds!A2:F3")
        let rows = try server.textRows(sheet: "Builds")
        #expect(rows.count == 3)
        #expect(rows[0] == header)
        #expect(rows[1][0] == "passed" && rows[1][1] == "2024-05-01" && rows[1][3] == "" && rows[1][4] == "1041" && rows[1][5] == "1.2")
        #expect(rows[2][0] == "failed" && rows[2][4] == "1042" && rows[2][5] == "1.3")
        #expect(rows[1][2].hasPrefix("builds.csv@") && rows[1][2].hasSuffix("#1"))
        // The key column is read below the header, at the row-id column's place (C), once; the header once.
        let gets = try server.requestLog().filter { ($0["methodId"] as? String) == "sheets.spreadsheets.values.get" }
        #expect(gets.compactMap { $0["range"] as? String } == ["Builds!A1:H1", "Builds!C2:C"])
        // A second run finds every row by its id: nothing is appended, no header written.
        let next = try SheetsFixtures.apiDestination(server, extra: "range: \"Builds!A:H\"\n\(SheetsHeaderTests.buildColumns)", base: dir.url)
        #expect(try await next.upload(try SheetsFixtures.item(dir, "builds.csv")) { _ in }.detail == "no new rows (2 already present)")
        #expect(try server.stats()["appends"] == 1)
        await destination.finish()
        await next.finish()
    }

    @Test func theIssuesHeaderWithAKeyLandsUnderItsNames() async throws {
        // Issue 18: a header `build_id, version, status, date` and `columns` set to those four. With `key`, no
        // row-id column is needed and every value lands under its own header.
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-header")
        defer { dir.remove() }
        try server.setRows([["build_id", "version", "status", "date"]], sheet: "Builds")
        try dir.write("builds.csv", SheetsHeaderTests.builds)
        let destination = try SheetsFixtures.apiDestination(
            server, extra: "range: \"Builds!A:D\"\n\(SheetsHeaderTests.buildColumns)\nkey: build_id", base: dir.url)
        _ = try await destination.upload(try SheetsFixtures.item(dir, "builds.csv")) { _ in }
        #expect(try server.textRows(sheet: "Builds") == [
            ["build_id", "version", "status", "date"],
            ["1041", "1.2", "passed", "2024-05-01"],
            ["1042", "1.3", "failed", "2024-05-02"],
        ])
        await destination.finish()
    }

    @Test func anEmptySheetGetsTheHeaderWithTheRowIDColumnOnce() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-header")
        defer { dir.remove() }
        try dir.write("a.csv", SheetsHeaderTests.builds)
        try dir.write("b.csv", "build_id,version,status,date\n1043,1.4,passed,2024-05-03\n")
        let destination = try SheetsFixtures.apiDestination(server, extra: "range: \"Builds!A:E\"", base: dir.url)
        // Two files at once: one header.
        let itemA = try SheetsFixtures.item(dir, "a.csv")
        let itemB = try SheetsFixtures.item(dir, "b.csv")
        async let a = destination.upload(itemA) { _ in }
        async let b = destination.upload(itemB) { _ in }
        _ = try await (a, b)
        let rows = try server.textRows(sheet: "Builds")
        #expect(rows.first == ["syncgate_row_id", "build_id", "version", "status", "date"])
        #expect(rows.count == 4)
        #expect(Set(rows.dropFirst().map { $0[1] }) == ["1041", "1042", "1043"])
        #expect(await destination.header.writes == 1)
        #expect(await destination.header.reads == 1)
        // rows: file with a key: its own columns, without the row id.
        let files = try SheetsFixtures.apiDestination(server, extra: "range: \"Files!A:F\"\nrows: file\nkey: name", base: dir.url)
        _ = try await files.upload(try SheetsFixtures.item(dir, "a.csv")) { _ in }
        let fileRows = try server.textRows(sheet: "Files")
        #expect(fileRows.first == SheetsConfig.fileColumns)
        #expect(fileRows.count == 2 && fileRows[1][0] == "a.csv")
        await destination.finish()
        await files.finish()
    }

    @Test func aConfiguredColumnMissingFromTheHeaderBlocksTheDestinationAndAppendsNothing() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-header")
        defer { dir.remove() }
        try server.setRows([["build_id", "version", "status"], ["1000", "0.9", "passed"]], sheet: "Builds")
        try dir.write("builds.csv", SheetsHeaderTests.builds)
        let item = try SheetsFixtures.item(dir, "builds.csv")
        // `date` is configured but not in the header.
        let keyed = try SheetsFixtures.apiDestination(
            server, extra: "range: \"Builds!A:D\"\n\(SheetsHeaderTests.buildColumns)\nkey: build_id", base: dir.url)
        let missing = await SheetsFixtures.uploadError(keyed, item)
        #expect(missing?.classification == Classification(.permanent, scope: .destination))  // blocked
        #expect(keyed.classify(try #require(missing)) == Classification(.permanent, scope: .destination))
        #expect(missing?.code == "missing-column")
        #expect(missing?.message.contains("has no column 'date'") == true)
        #expect(missing?.message.contains("(build_id, version, status)") == true)
        // The issue's case without `key`: the header has no place for the row id; said so, not shifted.
        try server.setRows([["build_id", "version", "status", "date"]], sheet: "Builds")
        let unkeyed = try SheetsFixtures.apiDestination(
            server, extra: "range: \"Builds!A:E\"\n\(SheetsHeaderTests.buildColumns)", base: dir.url)
        let noID = await SheetsFixtures.uploadError(unkeyed, item)
        #expect(noID?.classification == Classification(.permanent, scope: .destination))
        #expect(noID?.message.contains("has no column 'syncgate_row_id'") == true)
        #expect(noID?.message.contains("set `key`") == true)
        // Columns taken from the file itself (no `columns`): that file fails, the destination does not.
        try dir.write("other.csv", "build_id,colour\n1,red\n")
        try server.setRows([["syncgate_row_id", "build_id"]], sheet: "Loose")
        let loose = try SheetsFixtures.apiDestination(server, extra: "range: \"Loose!A:E\"", base: dir.url)
        let fileError = await SheetsFixtures.uploadError(loose, try SheetsFixtures.item(dir, "other.csv"))
        #expect(fileError?.classification == Classification(.permanent, scope: .file))
        #expect(fileError?.message.contains("has no column 'colour'") == true)
        #expect(try server.stats()["appends"] == 0)
        #expect(try server.textRows(sheet: "Builds") == [["build_id", "version", "status", "date"]])
        await keyed.finish()
        await unkeyed.finish()
        await loose.finish()
    }

    @Test func formulaLikeTextIsSentAsTextUnlessFormulasAllow() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-formula")
        defer { dir.remove() }
        let cells = ["=HYPERLINK(\"http://x.example\",\"y\")", "+1+2", "-2+3", "@SUM(A1)", "\tx", "\rx", "-5", "-0.5e3", "'q", "plain"]
        let csv = "key,value\n" + cells.enumerated().map { "k\($0.offset),\"\($0.element.replacingOccurrences(of: "\"", with: "\"\""))\"" }
            .joined(separator: "\n") + "\n"
        try dir.write("commits.csv", csv)
        let item = try SheetsFixtures.item(dir, "commits.csv")
        let expectedSent = ["'=HYPERLINK(\"http://x.example\",\"y\")", "'+1+2", "'-2+3", "'@SUM(A1)", "'\tx", "'\rx", "-5", "-0.5e3", "''q", "plain"]

        let guarded = try SheetsFixtures.apiDestination(
            server, extra: "range: \"Text!A:B\"\ncolumns: [key, value]\nkey: key", base: dir.url)
        _ = try await guarded.upload(item) { _ in }
        var sent = try SheetsHeaderTests.appendedValues(server)
        #expect(sent.count == 2)  // the header, then the rows
        #expect(sent.last?.compactMap { $0[1] as? String } == expectedSent)
        // Stored as text, the apostrophe not kept: nothing became a formula.
        let text = try server.textRows(sheet: "Text").dropFirst().map { $0[1] }
        #expect(text == cells)

        let allowed = try SheetsFixtures.apiDestination(
            server, extra: "range: \"Formulas!A:B\"\ncolumns: [key, value]\nkey: key\nformulas: allow", base: dir.url)
        _ = try await allowed.upload(item) { _ in }
        sent = try SheetsHeaderTests.appendedValues(server)
        #expect(sent.last?.compactMap { $0[1] as? String } == cells)
        #expect(try server.textRows(sheet: "Formulas")[1][1] == "formula:" + cells[0])

        // RAW: Sheets parses nothing, so nothing is changed.
        let raw = try SheetsFixtures.apiDestination(
            server, extra: "range: \"Raw!A:B\"\ncolumns: [key, value]\nkey: key\nvalue_input: RAW", base: dir.url)
        _ = try await raw.upload(item) { _ in }
        sent = try SheetsHeaderTests.appendedValues(server)
        #expect(sent.last?.compactMap { $0[1] as? String } == cells)
        await guarded.finish()
        await allowed.finish()
        await raw.finish()
    }

    @Test func appsScriptMapsTheHeaderAndKeepsFormulasAsText() async throws {
        let server = try await SheetsTestServer(appsScriptSecret: "s3cret-apps")
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-script-header")
        defer { dir.remove() }
        let sheet = "apps-script-AKfycbTEST"
        try dir.write("a.csv", "id,name\n1,=cmd|' /C calc'!A0\n2,bob\n")
        let destination = try SheetsFixtures.destination(
            "apps_script_url: \(server.appsScriptURL())\nsecret: s3cret-apps\ncolumns: [id, name]\nkey: id", base: dir.url)
        // Empty sheet: the script writes the header.
        _ = try await destination.upload(try SheetsFixtures.item(dir, "a.csv")) { _ in }
        #expect(try server.textRows(spreadsheet: sheet) == [["id", "name"], ["1", "=cmd|' /C calc'!A0"], ["2", "bob"]])
        // A header in another order is followed; a second post adds only the new row.
        try server.setRows([["name", "id"], ["x", "1"]], spreadsheet: sheet)
        try dir.write("a.csv", "id,name\n1,=cmd|' /C calc'!A0\n3,carol\n")
        let receipt = try await destination.upload(try SheetsFixtures.item(dir, "a.csv")) { _ in }
        #expect(receipt.detail == "Sheet1!A3:B3 (1 rows already present)")
        #expect(try server.textRows(spreadsheet: sheet) == [["name", "id"], ["x", "1"], ["carol", "3"]])
        // A header without a configured column: the destination is blocked, nothing appended.
        try server.setRows([["id", "title"]], spreadsheet: sheet)
        let error = await SheetsFixtures.uploadError(destination, try SheetsFixtures.item(dir, "a.csv"))
        #expect(error?.classification == Classification(.permanent, scope: .destination))
        #expect(error?.code == "missing-column")
        #expect(error?.message.contains("has no column 'name'") == true)
        #expect(try server.textRows(spreadsheet: sheet) == [["id", "title"]])
        await destination.finish()
    }

    @Test func rangeRowsAndColumns() throws {
        #expect(try A1Range(parsing: "Builds!A:H").headerRow == "Builds!A1:H1")
        #expect(try A1Range(parsing: "Sheet1").headerRow == "Sheet1!1:1")
        #expect(try A1Range(parsing: "'My sheet'!B2:F").headerRow == "'My sheet'!B2:F2")
        #expect(try A1Range(parsing: "'My sheet'!B2:F").columnBelowHeader(at: 1) == "'My sheet'!C3:C")
        #expect(try A1Range(parsing: "C:C").headerRowIsWholeRow == false)
        #expect(try A1Range(parsing: "Tab!C5").headerRow == "Tab!5:5")
        #expect(try A1Range(parsing: "Tab!C5").headerRowIsWholeRow)
        #expect(try A1Range(parsing: "Builds!A:D").width == 4)
        #expect(FormulaGuard.text("-12.5") == "-12.5")
        #expect(FormulaGuard.text("-1e") == "'-1e")
        #expect(FormulaGuard.text("-") == "'-")
        #expect(FormulaGuard.text("\r\nx") == "'\r\nx")
        #expect(FormulaGuard.text("a=b") == "a=b")
        #expect(FormulaGuard(active: true).cell(.number("-3")) == .number("-3"))
    }
}
