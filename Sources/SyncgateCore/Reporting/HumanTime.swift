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

    /// A time in UTC to the second, as `rclone lsl` and `aws s3 ls` list files: `2026-11-28 09:15:02`.
    public static func utc(_ date: Date) -> String {
        date.formatted(Date.VerbatimFormatStyle(
            format: "\(year: .defaultDigits)-\(month: .twoDigits)-\(day: .twoDigits) \(hour: .twoDigits(clock: .twentyFourHour, hourCycle: .zeroBased)):\(minute: .twoDigits):\(second: .twoDigits)",
            timeZone: .gmt, calendar: Calendar(identifier: .gregorian)))
    }

    /// A time left, in hours, minutes and seconds, the largest two units that apply: `42s`, `3m05s`, `1h02m`,
    /// `26h00m`.
    public static func remaining(_ seconds: Double) -> String {
        let total = Int(max(0, seconds).rounded())
        let (hours, minutes, secs) = (total / 3600, total % 3600 / 60, total % 60)
        if hours > 0 { return "\(hours)h" + (minutes < 10 ? "0" : "") + "\(minutes)m" }
        if minutes > 0 { return "\(minutes)m" + (secs < 10 ? "0" : "") + "\(secs)s" }
        return "\(secs)s"
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
