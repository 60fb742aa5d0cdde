import Foundation
import Synchronization

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
        return formatter.withLock { $0.string(from: date) }
    }

    /// The formatter is not safe to share between threads: each use holds the lock.
    private static let formatter: Mutex<ISO8601DateFormatter> = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return Mutex(formatter)
    }()
}
