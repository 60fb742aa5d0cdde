import Foundation
import SyncgateCore
import SyncgateJSON
import SyncgateTestSupport
import Testing

@testable import SyncgateSheets

/// Files that grow or are rewritten between runs: each record lands once, in order (issue 18). Every run is a new
/// destination (as each `syncgate sync` is), so nothing is remembered between runs but what is in the sheet.
@Suite(
    "Sheets growing and rewritten files against the loopback server", .serialized,
    .enabled(if: SheetsTestServer.shouldRun, "needs python3 with cryptography (scripts/test-deps.d/sheets.sh)"))
struct SheetsGrowthTests {
    /// One run: a fresh destination uploads `file` and finishes.
    static func run(_ server: SheetsTestServer, range: String, _ file: String, dir: TemporaryDirectory) async throws -> Receipt {
        let destination = try SheetsFixtures.apiDestination(server, extra: "range: \"\(range)\"", base: dir.url)
        let receipt = try await destination.upload(try SheetsFixtures.item(dir, file)) { _ in }
        await destination.finish()
        return receipt
    }

    @Test func csvAndNDJSONGrowingOverFiveRunsLandOnceInOrder() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-growth")
        defer { dir.remove() }
        var csv = "build_id,version,status,date\n"
        var ndjson = ""
        var records: [[String]] = []
        for run in 1...5 {
            // The first run starts with three records (the build log); then one more line per run. Two
            // records are identical (a build re-run with the same result): both are kept, once each.
            let added = run == 1 ? [1, 2, 3] : [run + 2]
            for n in added {
                let m = n == 5 ? 3 : n  // the fifth record is the third again
                let record = ["104\(m)", "1.\(m)", m % 2 == 0 ? "failed" : "passed", "2024-05-0\(m)"]
                records.append(record)
                csv += record.joined(separator: ",") + "\n"
                ndjson += "{\"build_id\": \(record[0]), \"version\": \"\(record[1])\", \"status\": \"\(record[2])\", \"date\": \"\(record[3])\"}\n"
            }
            try dir.write("builds.csv", csv)
            try dir.write("builds.ndjson", ndjson)
            let csvReceipt = try await SheetsGrowthTests.run(server, range: "Csv!A:E", "builds.csv", dir: dir)
            let ndReceipt = try await SheetsGrowthTests.run(server, range: "Nd!A:E", "builds.ndjson", dir: dir)
            if run > 1 {
                // Only the new line went, after the rows already there.
                let row = records.count + 1  // below the header
                #expect(csvReceipt.detail == "Csv!A\(row):E\(row) (\(records.count - 1) rows already present)")
                #expect(ndReceipt.detail == "Nd!A\(row):E\(row) (\(records.count - 1) rows already present)")
            }
            for sheet in ["Csv", "Nd"] {
                let rows = try server.textRows(sheet: sheet)
                #expect(rows.first == ["syncgate_row_id", "build_id", "version", "status", "date"], "run \(run), \(sheet)")
                #expect(rows.dropFirst().map { Array($0.dropFirst()) } == records, "run \(run), \(sheet)")
                #expect(Set(rows.dropFirst().map(\.[0])).count == records.count, "run \(run), \(sheet): row ids unique")
            }
        }
        #expect(records.count == 7)
        // Every run read the header once and the key column once (below the header), for each file.
        let gets = try server.requestLog().filter { ($0["methodId"] as? String) == "sheets.spreadsheets.values.get" }
        #expect(gets.compactMap { $0["range"] as? String }.filter { $0.hasPrefix("Csv") } == Array(repeating: ["Csv!A1:E1", "Csv!A2:A"], count: 5).flatMap { $0 })
        // Five runs of two files: a header write and one append each.
        #expect(try server.stats()["appends"] == 12)
    }

    @Test func aFileRewrittenInTheMiddleAppendsOnlyItsNewRecords() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-rewrite")
        defer { dir.remove() }
        try dir.write("log.csv", "id,status\n1,ok\n2,running\n3,ok\n4,ok\n5,ok\n")
        _ = try await SheetsGrowthTests.run(server, range: "Log!A:C", "log.csv", dir: dir)
        // Record 2 changed, a record inserted between 3 and 4, record 5 removed: two records are new.
        try dir.write("log.csv", "id,status\n1,ok\n2,passed\n3,ok\n3a,ok\n4,ok\n")
        let receipt = try await SheetsGrowthTests.run(server, range: "Log!A:C", "log.csv", dir: dir)
        #expect(receipt.detail == "Log!A7:C8 (3 rows already present)")
        let rows = try server.textRows(sheet: "Log").dropFirst().map { Array($0.dropFirst()) }
        #expect(rows == [["1", "ok"], ["2", "running"], ["3", "ok"], ["4", "ok"], ["5", "ok"], ["2", "passed"], ["3a", "ok"]])
        // The same content again: nothing.
        #expect(try await SheetsGrowthTests.run(server, range: "Log!A:C", "log.csv", dir: dir).detail == "no new rows (5 already present)")
    }

    @Test func rowIDsDependOnTheRecordNotOnTheFile() throws {
        let a = Record(line: 2, fields: [.init(name: "id", value: .string("1")), .init(name: "n", value: .number("2"))])
        let b = Record(line: 9, fields: [.init(name: "id", value: .string("1")), .init(name: "n", value: .number("2"))])
        let c = Record(line: 2, fields: [.init(name: "id", value: .string("1")), .init(name: "n", value: .string("2"))])
        #expect(RowBuilder.recordHash(a) == RowBuilder.recordHash(b))  // the line does not count
        #expect(RowBuilder.recordHash(a) != RowBuilder.recordHash(c))  // the type does
        #expect(RowBuilder.recordHash(a).count == RowBuilder.recordHashLength)
        #expect(RowBuilder.rowID(remoteName: "x.csv", hash: "00ff", occurrence: 2) == "x.csv@00ff#2")
    }
}
