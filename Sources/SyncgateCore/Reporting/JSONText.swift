import Foundation

/// Small helpers to print JSON objects with stable key order (one object per line for events).
public enum JSONText {
    /// Serialises a JSON-compatible value (dictionaries, arrays, strings, numbers, booleans, NSNull).
    public static func encode(_ value: Any, pretty: Bool = false) -> String {
        var options: JSONSerialization.WritingOptions = [.sortedKeys, .withoutEscapingSlashes]
        if pretty { options.insert(.prettyPrinted) }
        guard JSONSerialization.isValidJSONObject(value),
              let data = try? JSONSerialization.data(withJSONObject: value, options: options)
        else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// RFC 3339 time with milliseconds, UTC.
    public static func time(_ date: Date?) -> Any {
        guard let date else { return NSNull() }
        return formatterLock.withLock { formatter.string(from: date) }
    }

    private static let formatterLock = NSLock()
    nonisolated(unsafe) private static let formatter: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
}
