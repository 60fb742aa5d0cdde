import Foundation
import SyncgateJSON
import SyncgateTestSupport
import Testing

@testable import SyncgateSheets

@Suite("Record readers")
struct RecordReaderTests {
    /// Reads every record of `text` with tiny chunks, so that records straddle chunk boundaries.
    func read(_ text: String, _ format: RecordFormat, chunk: Int = 3) throws -> [Record] {
        let dir = try TemporaryDirectory("records")
        defer { dir.remove() }
        let url = try dir.write("f", text)
        let reader = try RecordReader(path: url.path, format: format, chunkSize: chunk)
        var records: [Record] = []
        while let record = try reader.next() { records.append(record) }
        return records
    }

    func values(_ records: [Record]) -> [[String]] {
        records.map { $0.fields.map { $0.value.cell.text } }
    }

    func error(_ text: String, _ format: RecordFormat) -> RecordError? {
        do {
            _ = try read(text, format)
            Issue.record("no error for \(text.debugDescription)")
            return nil
        } catch let error as RecordError {
            return error
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test func csvQuotesPerRFC4180() throws {
        let text = "id,name,note\r\n1,plain,x\r\n2,\"with, comma\",\"a \"\"quoted\"\" word\"\r\n3,\"two\nlines\",\"\"\r\n"
        let records = try read(text, .csv)
        #expect(values(records) == [["1", "plain", "x"], ["2", "with, comma", "a \"quoted\" word"], ["3", "two\nlines", ""]])
        #expect(records.map(\.line) == [2, 3, 4])
        #expect(records[1].fields.map(\.name) == ["id", "name", "note"])
    }

    @Test func csvLineNumbersCountQuotedLineBreaksAndSkipBlankLines() throws {
        let text = "\u{FEFF}a,b\n\"x\ny\",1\n\n3,4"  // BOM, multi-line field, blank line, no final newline
        let records = try read(text, .csv)
        #expect(values(records) == [["x\ny", "1"], ["3", "4"]])
        #expect(records.map(\.line) == [2, 5])
        #expect(records[0].fields[0].name == "a")
    }

    @Test func csvCRLFInsideQuotesIsKept() throws {
        let records = try read("a\r\n\"1\r\n2\"\r\n", .csv)
        #expect(values(records) == [["1\r\n2"]])
    }

    @Test func csvErrorsNameTheLine() throws {
        #expect(error("a,b\n1,2\n3\n", .csv) == RecordError(line: 3, message: "1 field, the header has 2"))
        #expect(error("a,b\n1,2\n3,x\"y\n", .csv)?.line == 3)
        #expect(error("a,b\n1,\"2\"x\n", .csv)?.line == 2)
        let open = error("a,b\n1,2\n3,\"never\nclosed\n", .csv)
        #expect(open?.line == 3)
        #expect(open?.message.contains("never closed") == true)
        #expect(error("a,a\n1,2\n", .csv)?.message.contains("twice") == true)
    }

    @Test func invalidUTF8IsAnError() throws {
        let dir = try TemporaryDirectory("records")
        defer { dir.remove() }
        let url = try dir.write("bad.csv", Data([0x61, 0x0A, 0x62, 0x0A, 0xFF, 0xFE, 0x0A]))
        let reader = try RecordReader(path: url.path, format: .csv)
        #expect(try reader.next()?["a"] == .string("b"))
        #expect(throws: RecordError(line: 3, message: "text is not valid UTF-8")) { try reader.next() }
    }

    @Test func ndjsonKeepsMemberOrderAndNumberLiterals() throws {
        let text = "{\"b\":1.50,\"a\":\"x\",\"c\":true,\"d\":null,\"e\":[1,{\"f\":2}]}\n\n  \r\n{\"b\":-0.0e+1,\"a\":\"\\u00e9\\ud83d\\ude00\"}\r\n"
        let records = try read(text, .ndjson)
        #expect(records.count == 2)
        #expect(records[0].fields.map(\.name) == ["b", "a", "c", "d", "e"])
        #expect(records[0]["b"] == .number("1.50"))
        #expect(records[0]["c"]?.cell == .bool(true))
        #expect(records[0]["d"]?.cell == .string(""))
        #expect(records[0]["e"]?.cell == .string("[1,{\"f\":2}]"))
        #expect(records[1]["a"] == .string("é😀"))
        #expect(records[1]["b"] == .number("-0.0e+1"))
        #expect(records.map(\.line) == [1, 4])
    }

    @Test func ndjsonErrorsNameTheLine() throws {
        #expect(error("{\"a\":1}\n{\"a\":2,}\n", .ndjson)?.line == 2)
        #expect(error("{\"a\":1}\n\n[1]\n", .ndjson) == RecordError(line: 3, message: "expected a JSON object, found an array"))
        #expect(error("{\"a\":01}\n", .ndjson)?.message.contains("leading zero") == true)
        #expect(error("{\"a\":\"x}\n", .ndjson)?.line == 1)
    }

    @Test func jsonArrayIsStreamedElementByElement() throws {
        let text = """
            [
              {"id": 1, "tags": ["a", "]", "}"], "s": "a \\"q\\" ,]"},
              {"id": 2,
               "nested": {"x": [1, 2]}}
            ]
            """
        let records = try read(text, .json, chunk: 2)
        #expect(records.map(\.line) == [2, 3])
        #expect(records[0]["s"] == .string("a \"q\" ,]"))
        #expect(records[1]["nested"]?.cell == .string("{\"x\":[1,2]}"))
        #expect(try read("[]", .json).isEmpty)
        #expect(try read(" {\"only\": \"one\"} \n", .json).map { $0["only"] } == [.string("one")])
    }

    @Test func jsonErrorsNameTheLine() throws {
        #expect(error("[\n{\"a\":1},\n{\"a\":2}\n", .json)?.message.contains("never closed") == true)
        #expect(error("[\n{\"a\":1},\n{\"a\" 2}\n]", .json)?.line == 3)
        #expect(error("[\n{\"a\":1},\n\n 5\n]", .json) == RecordError(line: 4, message: "expected a JSON object, found a number"))
        #expect(error("[\n{\"a\":1},\n]", .json)?.line == 3)  // trailing comma
        #expect(error("[{\"a\":1}] x", .json)?.message.contains("after the end") == true)
        #expect(error("[{\"a\":\n\n  tru}]", .json)?.line == 3)
        #expect(error("", .json)?.message.contains("empty") == true)
        #expect(error("\"text\"", .json)?.line == 1)
    }

    @Test func formatsByExtension() {
        #expect(RecordFormat.forExtension("CSV") == .csv)
        #expect(RecordFormat.forExtension("jsonl") == .ndjson)
        #expect(RecordFormat.forExtension("ndjson") == .ndjson)
        #expect(RecordFormat.forExtension("json") == .json)
        #expect(RecordFormat.forExtension("txt") == nil)
    }

    @Test func largeCSVStreamsWithBoundedChunks() throws {
        let dir = try TemporaryDirectory("records")
        defer { dir.remove() }
        var text = "n,text\n"
        for i in 1...20_000 { text += "\(i),\"row \(i), with \"\"quotes\"\"\"\n" }
        let url = try dir.write("big.csv", text)
        let reader = try RecordReader(path: url.path, format: .csv, chunkSize: 4096)
        var count = 0
        var last: Record?
        while let record = try reader.next() {
            count += 1
            last = record
        }
        #expect(count == 20_000)
        #expect(last?["text"] == .string("row 20000, with \"quotes\""))
        #expect(last?.line == 20_001)
        #expect(reader.bytesConsumed == Int64(text.utf8.count))
    }
}
