import Foundation
import NIOHTTP1
import SyncgateJSON
import SyncgateTestSupport
import Testing

@testable import SyncgateSheets

/// Seeded fuzzing of what the Sheets destination reads from outside: CSV, JSON and NDJSON record files, the JSON
/// parser behind them, and Google's error answers. A reader must end with records or a RecordError (with a line
/// number), never crash, hang or read without bound. See ``Fuzzer``.
@Suite("Sheets parsers under fuzzing")
struct SheetsParserFuzzTests {
    static let csv = Array("id,name,note\n1,\"Ada, Countess\",\"said \"\"hi\"\"\"\n2,Bob,\"two\nlines\"\r\n3,,\n".utf8)
    static let ndjson = Array("{\"id\":1,\"v\":[1,2,{\"x\":null}]}\n{\"id\":\"2\",\"v\":\"\\u00e9\\n\"}\n\n{\"id\":3,\"v\":-1.5e3}\n".utf8)
    static let json = Array("[{\"id\":1,\"ok\":true},{\"id\":2,\"ok\":false,\"deep\":{\"a\":[[[]]]}}]".utf8)

    func readAll(_ bytes: [UInt8], _ format: RecordFormat, in dir: TemporaryDirectory) {
        guard let url = try? dir.write("input", Data(bytes)), let reader = try? RecordReader(path: url.path, format: format, chunkSize: 7) else { return }
        var count = 0
        while count < 10_000 {
            do {
                guard try reader.next() != nil else { return }
                count += 1
            } catch let error as RecordError {
                #expect(error.line >= 1)
                return
            } catch {
                return
            }
        }
        Issue.record("a reader produced more than 10,000 records from \(bytes.count) bytes")
    }

    @Test(arguments: [RecordFormat.csv, .ndjson, .json])
    func recordReadersNeverCrash(_ format: RecordFormat) throws {
        let dir = try TemporaryDirectory("sheets-fuzz")
        defer { dir.remove() }
        let seeds = [Self.csv, Self.ndjson, Self.json]
        var fuzzer = Fuzzer("records-\(format.rawValue)", seeds: seeds, rounds: 6_000)
        let executions = fuzzer.run { readAll($0, format, in: dir) }
        #expect(executions >= 6_000)
    }

    @Test func jsonParserAndErrorAnswersNeverCrash() {
        let errorBody = Array(#"{"error":{"code":429,"message":"Quota exceeded for quota metric 'Write requests'","status":"RESOURCE_EXHAUSTED","details":[]}}"#.utf8)
        let tokenBody = Array(#"{"access_token":"ya29.abc","expires_in":3599,"token_type":"Bearer"}"#.utf8)
        let append = Array(#"{"spreadsheetId":"x","tableRange":"Builds!A1:D3","updates":{"updatedRange":"Builds!A4:D5","updatedRows":2}}"#.utf8)
        var fuzzer = Fuzzer("sheets-json", seeds: [errorBody, tokenBody, append, Self.json, Array(Self.ndjson.prefix(30))], rounds: 30_000)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Retry-After", value: "7")
        fuzzer.run { bytes in
            _ = try? JSONParser.parse(bytes)
            _ = SheetsErrorMapper.error(for: HTTPAnswer(status: 429, headers: headers, body: bytes), operation: "values.append", request: .write)
        }
    }
}
