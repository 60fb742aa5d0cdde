import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// Where a Sheets destination's rows go, as the core compares it between runs (docs/engine.md, "A destination
/// pointed elsewhere"): the spreadsheet and the sheet of `range` (not its columns), or the web app, whose URL is a
/// capability and is never shown.
@Suite("sheets: where the rows go")
struct SheetsTargetTests {
    let dir: TemporaryDirectory
    let environment: [String: String]

    init() throws {
        dir = try TemporaryDirectory("sheets-target")
        environment = ["HOME": dir.path, "GCE_METADATA_HOST": "127.0.0.1:9"]
    }

    func target(_ keys: String) throws -> DestinationTarget {
        try #require(try SheetsFixtures.validated(keys, base: dir.url, environment: environment).target)
    }

    @Test func theSpreadsheetAndSheetAreTheTargetNotTheColumns() throws {
        defer { dir.remove() }
        let builds = try target("spreadsheet_id: abc\nrange: Builds!A:H")
        #expect(builds.description == "spreadsheet abc, sheet Builds")
        #expect(try target("spreadsheet_id: abc\nrange: Builds!B2:J").digest == builds.digest, "other columns, the same sheet")
        #expect(try target("spreadsheet_id: abc\nrange: Other!A:H").digest != builds.digest)
        #expect(try target("spreadsheet_id: xyz\nrange: Builds!A:H").digest != builds.digest)
        #expect(try target("spreadsheet_id: abc\nrange: Builds!A:H\napi_base: http://127.0.0.1:9").digest != builds.digest)
    }

    @Test func aWebAppIsComparedByItsURLAndNamedByItsHost() throws {
        defer { dir.remove() }
        let url = "https://script.google.com/macros/s/AKfycbSECRET/exec"
        let app = try target("apps_script_url: \(url)\nsecret: s3cr3t-value")
        #expect(app.description == "an Apps Script web app at script.google.com")
        #expect(!app.description.contains("AKfycbSECRET"))
        #expect(try target("apps_script_url: https://script.google.com/macros/s/OTHER/exec\nsecret: s3cr3t-value").digest != app.digest)
        #expect(try target("apps_script_url: \(url)\nsecret: another-secret").digest == app.digest, "a new secret is the same web app")
    }
}
