import DestinationConformance
import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing
@testable import SyncgateSheets

/// The destination conformance suite (Tests/DestinationConformance) against the loopback Sheets server, one row per
/// file (`rows: file`, so that any bytes make a valid file). A spreadsheet only appends: nothing to delete or read
/// back; its listing names the files whose rows it holds.
@Suite(
    "Sheets destination conformance", .serialized,
    .enabled(if: SheetsTestServer.shouldRun, "needs python3 with cryptography (scripts/test-deps.d/sheets.sh)"))
struct SheetsConformanceTests {
    @Test func conforms() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let other = try await SheetsTestServer()  // its key is not the server's: refused
        defer { other.stop() }
        let dir = try TemporaryDirectory("sheets-conformance")
        defer { dir.remove() }
        var key = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: other.keyFile)) as? [String: Any])
        key["token_uri"] = "\(server.baseURL)/token"
        let forged = try dir.write("forged-key.json", try JSONSerialization.data(withJSONObject: key))
        let unreachable = Loopback.freePort()
        let base = dir.url
        let harness = DestinationConformance.Harness(
            name: "sheets",
            working: { try SheetsFixtures.apiDestination(server, extra: "rows: file", base: base) },
            unreachable: {
                try SheetsFixtures.destination(
                    "spreadsheet_id: test-spreadsheet\ncredentials_file: \(server.keyFile.path)\napi_base: http://127.0.0.1:\(unreachable)\nrows: file",
                    base: base)
            },
            refused: {
                try SheetsFixtures.destination(
                    "spreadsheet_id: test-spreadsheet\ncredentials_file: \(forged.path)\napi_base: \(server.baseURL)\nrows: file", base: base)
            },
            deletes: false)
        let problems = await DestinationConformance.run(harness)
        #expect(problems.isEmpty, "\(problems)")
    }
}
