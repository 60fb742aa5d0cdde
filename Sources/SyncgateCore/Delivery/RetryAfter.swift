import Foundation

/// Reads an HTTP `Retry-After` value (RFC 9110 §10.2.3): delay-seconds or an IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`). Parsed by hand, strictly: Foundation's DateFormatter traps on some
/// non-ASCII input on Linux (found by fuzzing), and a server's header is outside input.
public enum RetryAfter {
    /// The longest wait a server can ask for through this header (longer values are clamped).
    public static let longest: Duration = .seconds(3600)

    public static func parse(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, text.utf8.count <= 64, text.allSatisfy(\.isASCII) else { return nil }
        if text.allSatisfy(\.isNumber) {
            guard let seconds = Int64(text) else { return longest }  // more digits than Int64 holds
            return min(.seconds(seconds), longest)
        }
        guard let date = httpDate(text) else { return nil }
        let seconds = max(0, min(date.timeIntervalSince(now), longest.seconds))
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    static let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]

    /// An IMF-fixdate, or nil.
    public static func httpDate(_ text: String) -> Date? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[5] == "GMT", parts[0].count == 4, parts[0].hasSuffix(","),
              days.contains(String(parts[0].dropLast())), parts[1].count == 2, let day = Int(parts[1]), (1...31).contains(day),
              let monthIndex = months.firstIndex(of: String(parts[2])), parts[3].count == 4, let year = Int(parts[3]), year >= 1970
        else { return nil }
        let clock = parts[4].split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 }),
              let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0)!
        let components = DateComponents(year: year, month: monthIndex + 1, day: day, hour: hour, minute: minute, second: second)
        guard let date = calendar.date(from: components), calendar.component(.day, from: date) == day else { return nil }
        return date
    }
}
