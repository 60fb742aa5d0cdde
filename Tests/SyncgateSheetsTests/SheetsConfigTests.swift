import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

@testable import SyncgateSheets

@Suite("sheets config keys")
struct SheetsConfigTests {
    let base = URL(fileURLWithPath: "/tmp/sheets-config-base")

    func configError(_ keys: String) -> ConfigError? {
        do {
            _ = try SheetsFixtures.destination(keys, base: base)
            Issue.record("config accepted: \(keys)")
            return nil
        } catch let error as ConfigError {
            return error
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test func everyKeyIsReadWithItsDefault() throws {
        let d = try SheetsFixtures.destination("spreadsheet_id: abc\ncredentials_file: keys/sa.json", base: base)
        let c = d.config
        #expect(c.spreadsheetID == "abc")
        #expect(c.credentialsFile == "/tmp/sheets-config-base/keys/sa.json")
        #expect(c.range == "Sheet1")
        #expect(c.rows == .records)
        #expect(c.columns == nil && c.key == nil && c.addsRowID)
        #expect(c.valueInput == .userEntered)
        #expect(c.maxRowsPerRequest == 500)
        #expect(c.apiBase == "https://sheets.googleapis.com")
        #expect(c.writesPerWindow == 60 && c.writeWindow == .seconds(60))
        #expect(c.requestTimeout == .seconds(60))

        let full = try SheetsFixtures.destination(
            """
            spreadsheet_id: 1AbC
            range: "Builds!A:H"
            credentials_file: /keys/sa.json
            rows: records
            columns: [build_id, version, status, date]
            key: version
            value_input: RAW
            max_rows_per_request: 50
            api_base: http://127.0.0.1:9/
            writes_per_minute: 10
            write_window: 2s
            request_timeout: 5s
            """, base: base
        ).config
        #expect(full.keyColumnIndex == 1 && !full.addsRowID)
        #expect(full.valueInput == .raw && full.maxRowsPerRequest == 50 && full.writesPerWindow == 10 && full.writeWindow == .seconds(2))

        let script = try SheetsFixtures.destination("apps_script_url: https://script.google.com/macros/s/X/exec\nsecret: s3cr3t-value\nrows: file", base: base).config
        #expect(script.usesAppsScript && script.rows == .file)
        #expect(script.secret?.reveal() == "s3cr3t-value")
        #expect(Redactor.shared.redact("token s3cr3t-value") == "token <redacted>")
    }

    @Test func badValuesAreLocated() {
        let e1 = configError("spreadsheet_id: abc\ncredentials_file: k.json\nmax_rows_per_request: 0")
        #expect(e1?.keyPath == "destinations[0].max_rows_per_request")
        #expect(e1?.line == 11)
        #expect(configError("credentials_file: k.json")?.message.contains("spreadsheet_id") == true)
        #expect(configError("spreadsheet_id: abc\ncredentials_file: \"\"")?.keyPath == "destinations[0].credentials_file")
        #expect(configError("spreadsheet_id: abc\ncredentials_file: k\nkey: id")?.message.contains("needs `columns`") == true)
        #expect(configError("spreadsheet_id: abc\ncredentials_file: k\ncolumns: [a]\nkey: b")?.keyPath == "destinations[0].key")
        #expect(configError("spreadsheet_id: abc\ncredentials_file: k\nrows: file\ncolumns: [name, colour]")?.message.contains("colour") == true)
        #expect(configError("spreadsheet_id: abc\ncredentials_file: k\nrows: table") != nil)
        #expect(configError("spreadsheet_id: abc\ncredentials_file: k\nvalue_input: PARSED") != nil)
        #expect(configError("spreadsheet_id: abc\ncredentials_file: k\nrange: \"'open!A:B\"")?.keyPath == "destinations[0].range")
        #expect(configError("apps_script_url: ftp://x/y")?.keyPath == "destinations[0].apps_script_url")
        #expect(configError("apps_script_url: https://x/y\nspreadsheet_id: abc") != nil)
        #expect(configError("spreadsheet_id: abc\ncredentials_file: k\ncolour: blue")?.message.contains("colour") == true)
        #expect(configError("spreadsheet_id: abc\ncredentials_file: k\nwrites_per_minute: 0")?.keyPath == "destinations[0].writes_per_minute")
    }

    @Test func formulasKey() throws {
        let plain = try SheetsFixtures.destination("spreadsheet_id: abc\ncredentials_file: k", base: base).config
        #expect(plain.formulas == .text && plain.formulaGuard.active && plain.ownCellGuard.active)
        let allow = try SheetsFixtures.destination("spreadsheet_id: abc\ncredentials_file: k\nformulas: allow", base: base).config
        #expect(allow.formulas == .allow && !allow.formulaGuard.active && allow.ownCellGuard.active)
        let raw = try SheetsFixtures.destination("spreadsheet_id: abc\ncredentials_file: k\nvalue_input: RAW", base: base).config
        #expect(!raw.formulaGuard.active && !raw.ownCellGuard.active)
        let script = try SheetsFixtures.destination("apps_script_url: https://x/y\nvalue_input: RAW", base: base).config
        #expect(script.formulaGuard.active)  // setValues parses whatever value_input says
        let error = configError("spreadsheet_id: abc\ncredentials_file: k\nformulas: evaluate")
        #expect(error?.keyPath == "destinations[0].formulas")
        #expect(error?.line == 11)
    }

    @Test func fileModeKeyMayBeAFileColumn() throws {
        let c = try SheetsFixtures.destination("spreadsheet_id: abc\ncredentials_file: k\nrows: file\nkey: sha256", base: base).config
        #expect(c.keyColumnIndex == 2)
        #expect(c.effectiveFileColumns == SheetsConfig.fileColumns)
    }
}
