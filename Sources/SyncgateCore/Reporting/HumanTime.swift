import Foundation

/// Times as a person reads them in a report, in the local time zone: `09:12` today, `2026-11-23 09:12` on another
/// day. JSON output uses ``ReportJSON/time(_:)`` (ISO 8601, UTC) instead.
public enum HumanTime {
    public static func text(_ date: Date, now: Date = Date()) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = Calendar.current.isDate(date, inSameDayAs: now) ? "HH:mm" : "yyyy-MM-dd HH:mm"
        return formatter.string(from: date)
    }
}
