import Foundation
import SyncgateJSON
import Testing

/// The one JSON parser: against Foundation's on valid and invalid texts, and the edge cases the plugin protocol,
/// SDL RPC parameters and Sheets records rely on.
@Suite("JSON parser")
struct JSONParserTests {
    func parse(_ text: String, maxDepth: Int = JSONParser.defaultMaxDepth) -> JSONValue? { try? JSONParser.parse(text, maxDepth: maxDepth) }

    /// What Foundation reads from `text`, for comparing values (NSNumber compares 1 and 1.0 equal).
    func foundation(_ text: String) -> NSObject? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed) as? NSObject
    }

    @Test func readsWhatFoundationReads() throws {
        let texts = [
            #"{"a":1,"b":[true,false,null],"c":{"d":"e"},"f":-1.5e3,"g":0,"h":"\u00e9\ud83d\ude00\n\t\"\\\/"}"#,
            #"  [ 1 , 2.25 , "x" , { } , [ ] ]  "#, #""plain""#, "12345678901", "-0.0", #"{"id":3,"progress":4096}"#,
            #"{"name":"日本語/😀.dat"}"#, "1E+2", "1e-2", "0.5E2", "\t\r\n true \n",
        ]
        for text in texts {
            let ours = try #require(parse(text), "\(text)")
            let theirs = try #require(foundation(text), "\(text)")
            #expect(foundation(ours.text) == theirs, "\(text) -> \(ours.text)")
        }
    }

    @Test func refusesWhatIsNotJSON() {
        let texts = [
            "", "{", "}", #"{"a"}"#, #"{"a":}"#, #"{"a":1,}"#, "[1,]", "01", "-01", "1.", ".5", "1e", "1e+", "+1", "-", "tru", "nul",
            "True", #""unterminated"#, #""bad \x escape""#, #""lone \ud800 surrogate""#, #""\udc00""#, #""\ud800\u0041""#,
            #""\u12""#, #""\u12G4""#, "\"tab\there\"", "[1] 2", "{\"a\":1}}", "NaN", "Infinity", "-Infinity", "[1 2]",
            #"{"a" 1}"#, "{1:2}", "'single'", "/* comment */ 1",
        ]
        for text in texts { #expect(parse(text) == nil, "\(text)") }
        #expect((try? JSONParser.parse([0x22, 0xFF, 0x22])) == nil, "invalid UTF-8")
        #expect((try? JSONParser.parse([0x22, 0x5C, 0x6E, 0xC3, 0x22])) == nil, "invalid UTF-8 after an escape")
    }

    @Test func escapesAndSurrogatePairs() {
        #expect(parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{8}\u{C}\n\r\t"))
        #expect(parse(#""\u0041\u00e9\u20AC""#) == .string("Aé€"))
        #expect(parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(parse(#""\uD83D\uDE00 and \u0000""#) == .string("😀 and \u{0}"))
        #expect(parse(#""plain 😀 text""#) == .string("plain 😀 text"))
    }

    @Test func numbersKeepTheirTextAndReadExactly() throws {
        #expect(parse("-0") == .number("-0"))
        #expect(parse("-0.0e+1") == .number("-0.0e+1"))
        #expect(parse("1.50") == .number("1.50"))
        let big = try #require(parse("9223372036854775807"))
        #expect(big.int64 == Int64.max)
        #expect(parse("-9223372036854775808")?.int64 == Int64.min)
        #expect(parse("9007199254740993")?.int64 == 9_007_199_254_740_993, "exact beyond Double's 2^53")
        #expect(parse("9223372036854775808")?.int64 == nil, "beyond Int64")
        #expect(parse("1e3")?.int64 == 1000)
        #expect(parse("2.0")?.int64 == 2)
        #expect(parse("2.5")?.int64 == nil)
        #expect(parse("2.5E-1")?.double == 0.25)
        #expect(parse("1e400")?.double == nil, "beyond Double's range")
        #expect(parse("-0")?.double?.sign == .minus)
        #expect(parse("\"3\"")?.int64 == nil, "a string is not a number")
        #expect(JSONValue.double(3.0) == .number("3"))
        #expect(JSONValue.double(0.1).double == 0.1)
        #expect(JSONValue.double(.nan) == .null)
        #expect(JSONValue.int(Int64.min).text == "-9223372036854775808")
    }

    @Test func deepNestingIsBounded() throws {
        let deep = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(parse(deep) != nil)
        #expect(parse("[" + deep + "]") == nil)
        let objects = String(repeating: #"{"a":"#, count: 64) + "1" + String(repeating: "}", count: 64)
        #expect(parse(objects, maxDepth: 64)?.text == objects)
        #expect(parse("[" + objects + "]", maxDepth: 64) == nil)
        let tooDeep = String(repeating: "[", count: 100_000)
        #expect(parse(tooDeep) == nil, "refused, not a stack overflow")
    }

    @Test func errorsSayWhereAndWhat() {
        func failure(_ text: String) -> JSONParser.Failure? {
            do {
                _ = try JSONParser.parse(text)
                return nil
            } catch {
                return error
            }
        }
        #expect(failure(#"{"a":1,}"#)?.offset == 7)
        #expect(failure(#"{"a":1,}"#)?.message == "expected a quoted member name")
        #expect(failure("[1] 2")?.offset == 4)
        #expect(failure("[1] 2")?.message == "unexpected '2' after the JSON value")
        #expect(failure("01")?.message == "invalid number (leading zero)")
        #expect(failure(#""a\qb""#)?.message == "invalid escape '\\q'")
        #expect(failure("\"a\u{1}\"")?.message == "control character in a string (escape it)")
        #expect(failure("[1,\n 2,\n x]")?.offset == 9)
        #expect(failure("\u{7}")?.message == "unexpected '\\x07' where a JSON value should start")
        #expect(failure(#"{"a":1"#)?.message == "unexpected end of JSON inside an object")
        #expect((try? JSONParser.parse(Array(#"xx[1,]"#.utf8)[2...])) == nil)
        do {
            _ = try JSONParser.parse(Array(#"xx[1,]"#.utf8)[2...])
        } catch {
            #expect(error.offset == 3, "counted from the start of the slice")
        }
    }

    @Test func objectsKeepTheirOrderAndEveryMember() throws {
        let value = try JSONParser.parse(#"{"b":1,"a":2,"b":3}"#)
        #expect(value.object?.keys == ["b", "a", "b"])
        #expect(value["b"] == 1, "the first of a name written twice")
        #expect(value.text == #"{"b":1,"a":2,"b":3}"#)
        #expect(JSONText.compact(value, sortedKeys: true) == #"{"a":2,"b":1,"b":3}"#)
        #expect(value.object?.dictionary == ["b": 1, "a": 2])
    }

    @Test func whatTheWriterWritesReadsBack() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Character] = ["a", "\"", "\\", "\n", "\u{1}", "\u{8}", "\u{C}", "é", "😀", "/", " ", "\u{2028}", "\u{7F}"]
        for _ in 0..<500 {
            let text = String((0..<Int.random(in: 0..<20, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            let value: JSONValue = [
                "s": .string(text), "n": .int(Int.random(in: -1_000_000...1_000_000, using: &generator)),
                "a": [.bool(true), .null, .string(text), .double(Double.random(in: -1e6...1e6, using: &generator))],
            ]
            #expect(parse(value.text) == value, "\(value.text)")
            #expect(foundation(value.text) != nil, "\(value.text)")
            #expect(!value.text.contains("\n") && !value.text.contains("\u{2028}"))
        }
    }
}
