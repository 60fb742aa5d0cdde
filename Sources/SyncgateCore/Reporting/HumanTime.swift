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

    /// How long ago, roughly: `just now`, `12 min ago`, `2 h ago`, `3 d ago`.
    public static func ago(_ date: Date, now: Date = Date()) -> String {
        let seconds = max(0, now.timeIntervalSince(date))
        switch seconds {
        case ..<60: return "just now"
        case ..<3600: return "\(Int(seconds / 60)) min ago"
        case ..<172_800: return "\(Int(seconds / 3600)) h ago"
        default: return "\(Int(seconds / 86400)) d ago"
        }
    }
}
