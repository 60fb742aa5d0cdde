import Foundation
import Synchronization
import SyncgateJSON

/// The reports' JSON (events, `status --json`, the HTTP API, JSON log lines): objects built as dictionaries of
/// Swift values, written by ``JSONText`` with keys sorted, one object per line unless pretty.
public enum ReportJSON {
    /// The JSON text of a JSON-compatible value: dictionaries with String keys, arrays, strings, integers, floating
    /// point numbers, booleans and NSNull. Anything else makes the whole text `{}`.
    public static func encode(_ value: Any, pretty: Bool = false) -> String {
        guard let json = jsonValue(value) else { return "{}" }
        return pretty ? JSONText.pretty(json, sortedKeys: true) : JSONText.compact(json, sortedKeys: true)
    }

    /// `value` as a ``JSONValue``; nil when something in it has no JSON form.
    public static func jsonValue(_ value: Any) -> JSONValue? {
        switch value {
        case let text as String: return .string(text)
        case let flag as Bool: return .bool(flag)
        case let number as Int: return .int(number)
        case let number as Int64: return .int(number)
        case let number as Int32: return .int(Int64(number))
        case let number as UInt64: return .number(String(number))
        case let number as UInt32: return .int(Int64(number))
        case let number as UInt: return .number(String(number))
        case let number as Double: return double(number)
        case let number as Float: return double(Double(number))
        case is NSNull: return .null
        case let dictionary as [String: Any]:
            var object = JSONObject()
            for key in dictionary.keys.sorted() {
                guard let item = jsonValue(dictionary[key]!) else { return nil }
                object.members.append(JSONValue.Member(name: key, value: item))
            }
            return .object(object)
        case let items as [Any]:
            var array: [JSONValue] = []
            array.reserveCapacity(items.count)
            for item in items {
                guard let converted = jsonValue(item) else { return nil }
                array.append(converted)
            }
            return .array(array)
        default: return nil
        }
    }

    /// A Double as the reports always wrote it: integral values as integers (`3`, `-0`), others in their shortest
    /// form (`0.25`, `1e-07`, `1e+20`); NaN and the infinities have no JSON form.
    private static func double(_ number: Double) -> JSONValue? {
        guard number.isFinite else { return nil }
        if number.rounded() == number, abs(number) < 1e16 {
            return .number(number == 0 && number.sign == .minus ? "-0" : String(Int64(number)))
        }
        return .number("\(number)")
    }

    /// RFC 3339 time with milliseconds (rounded), UTC; NSNull for no time.
    public static func time(_ date: Date?) -> Any {
        guard let date else { return NSNull() }
        return timeFormatter.withLock { $0.string(from: date) }
    }

    // Not Date.ISO8601FormatStyle: it truncates the milliseconds where this formatter rounds them.
    private static let timeFormatter: Mutex<ISO8601DateFormatter> = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return Mutex(formatter)
    }()
}
