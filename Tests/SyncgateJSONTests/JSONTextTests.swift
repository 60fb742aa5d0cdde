import Foundation
import SyncgateJSON
import Testing

/// The one JSON text builder: escapes, member order, the pretty layout, Codable.
@Suite("JSON text")
struct JSONTextTests {
    @Test func stringEscapes() {
        #expect(JSONText.string("plain/text é😀") == #""plain/text é😀""#)
        #expect(JSONText.string("\"\\\n\r\t\u{8}\u{C}") == #""\"\\\n\r\t\b\f""#)
        #expect(JSONText.string("\u{0}\u{1F}\u{7F}") == "\"\\u0000\\u001f\u{7F}\"")
        #expect(JSONText.string("a\u{2028}b\u{2029}") == #""a\u2028b\u2029""#)
    }

    @Test func compactKeepsOrderUnlessSorted() {
        let value: JSONValue = ["op": "put", "id": 7, "fields": ["z": true, "a": .null, "m": [1, 2.5]]]
        #expect(value.text == #"{"op":"put","id":7,"fields":{"z":true,"a":null,"m":[1,2.5]}}"#)
        #expect(JSONText.compact(value, sortedKeys: true) == #"{"fields":{"a":null,"m":[1,2.5],"z":true},"id":7,"op":"put"}"#)
        #expect(JSONValue.object(sorting: ["b": 1, "a": 2]).text == #"{"a":2,"b":1}"#)
        #expect(JSONText.object([("b", "1"), ("a", JSONText.string("x"))]) == #"{"b":1,"a":"x"}"#)
        #expect(JSONText.array(["1", "true"]) == "[1,true]")
    }

    @Test func prettyLayout() {
        let value: JSONValue = ["b": [1, "x"], "a": [:], "c": [], "d": ["e": 1]]
        let expected = """
            {
              "a" : {

              },
              "b" : [
                1,
                "x"
              ],
              "c" : [

              ],
              "d" : {
                "e" : 1
              }
            }
            """
        #expect(JSONText.pretty(value, sortedKeys: true) == expected)
        #expect(JSONText.pretty(.string("x")) == #""x""#)
    }

    @Test func codableRoundTrip() throws {
        let value: JSONValue = ["a": [1, -2, 2.5, true, "s"], "b": ["c": 9_007_199_254_740_993]]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(value)
        #expect(String(decoding: data, as: UTF8.self) == #"{"a":[1,-2,2.5,true,"s"],"b":{"c":9007199254740993}}"#)
        let back = try JSONDecoder().decode(JSONValue.self, from: data)
        #expect(back == value)
    }

    @Test func objectEditing() {
        var object: JSONObject = ["a": 1, "b": 2]
        object["a"] = 3
        object["c"] = 4
        object["b"] = nil
        #expect(JSONValue.object(object).text == #"{"a":3,"c":4}"#)
        #expect(object.count == 2 && object[0].name == "a")
    }
}
