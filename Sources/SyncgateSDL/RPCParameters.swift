import SyncgateJSON

/// RPC parameters: a JSON object on the wire, compact with keys sorted when we write it; Core's pretty-printed
/// JSON is parsed, never compared as bytes. Integers stay exact (``JSONValue`` keeps a number's text).
public enum RPCParameters {
    /// Most values one RPC's parameters may hold. A ListFiles answer naming 1,000 files holds about 1,010; the
    /// limit keeps a peer's JSON from costing memory out of proportion to its size (a 4 MiB array of `0`s would
    /// be two million values).
    public static let maxValues = 100_000

    /// Compact JSON bytes, keys sorted, `/` not escaped.
    public static func encode(_ parameters: [String: JSONValue]) -> [UInt8] {
        Array(JSONText.compact(.object(sorting: parameters), sortedKeys: true).utf8)
    }

    /// Parses a JSON object (RPC parameters). An empty payload is an empty object. Throws, before parsing, for a
    /// document of more than `maxValues` values.
    public static func parse(_ bytes: [UInt8], maxValues: Int = RPCParameters.maxValues) throws(SDLError) -> [String: JSONValue] {
        if bytes.isEmpty { return [:] }
        let values = countValues(bytes, stoppingAfter: maxValues)
        guard values <= maxValues else {
            throw SDLError.malformedJSON("more than \(maxValues) values in \(bytes.count) bytes")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw SDLError.malformedJSON(error.description)
        }
        guard case .object(let object) = value else { throw SDLError.malformedJSON("parameters are not an object") }
        return object.dictionary
    }

    /// An upper bound of the number of values in a JSON text, in one pass: every value but the outermost either
    /// follows a `,` or is the first in its container (after its `[` or `{`), so the `,`, `[` and `{` outside
    /// strings, plus one, bound it. Stops counting past `limit`.
    static func countValues(_ bytes: [UInt8], stoppingAfter limit: Int) -> Int {
        var count = 1
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: ","), UInt8(ascii: "["), UInt8(ascii: "{"):
                count += 1
                if count > limit { return count }
            default: break
            }
        }
        return count
    }
}
