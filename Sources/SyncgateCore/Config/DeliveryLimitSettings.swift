import Foundation

/// `rate: { requests_per_second, burst }`: how many requests syncgate itself may start at a destination (see
/// ``DeliveryLimits`` for what counts as one).
public struct RateLimit: Sendable, Hashable {
    public var requestsPerSecond: Double
    /// Requests that may start at once after a quiet spell.
    public var burst: Int

    public init(requestsPerSecond: Double, burst: Int = 1) {
        self.requestsPerSecond = requestsPerSecond
        self.burst = burst
    }
}

/// `rate:` as written: a mapping, or `off` (which lifts a limit set in `defaults:`).
struct RateSetting: Decodable, Sendable, Hashable {
    var limit: RateLimit?

    enum CodingKeys: String, CodingKey {
        case requestsPerSecond = "requests_per_second"
        case burst
    }

    init(from decoder: any Decoder) throws {
        if let text = try? decoder.singleValueContainer().decode(String.self) {
            guard text == "off" else {
                throw ConfigValueError("expected {requests_per_second: N, burst: M} or off, found '\(text)'")
            }
            limit = nil
            return
        }
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let perSecond = try c.decode(Double.self, forKey: .requestsPerSecond)
        let burst = try c.decodeIfPresent(Int.self, forKey: .burst) ?? 1
        guard perSecond > 0, perSecond <= 1_000_000 else {
            throw ConfigValueError("must be > 0 and at most 1000000 (rate: off lifts the limit)", key: CodingKeys.requestsPerSecond)
        }
        guard burst >= 1, burst <= 1_000_000 else { throw ConfigValueError("must be between 1 and 1000000", key: CodingKeys.burst) }
        limit = RateLimit(requestsPerSecond: perSecond, burst: burst)
    }
}

/// `bandwidth:`: bytes per second for all the uploads of one destination together, constant (`10MiB`) or by the
/// time of day, in local time, as rclone's `--bwlimit` timetable: `"08:00,512KiB 12:00,10MiB 19:00,off"`. Each
/// entry holds from its time until the next one; the last one holds over midnight until the first. `off` is no
/// limit.
public struct BandwidthSchedule: Sendable, Hashable, Decodable, CustomStringConvertible {
    public struct Entry: Sendable, Hashable {
        /// Minutes after local midnight.
        public var minute: Int
        /// Bytes per second; nil: no limit.
        public var bytesPerSecond: Int64?

        public init(minute: Int, bytesPerSecond: Int64?) {
            self.minute = minute
            self.bytesPerSecond = bytesPerSecond
        }
    }

    /// In the order of the day; one entry at minute 0 for a constant limit.
    public private(set) var entries: [Entry]
    /// The zone the times are read in (the machine's own by default).
    public var timeZone: TimeZone

    public init(entries: [Entry], timeZone: TimeZone = .current) {
        self.entries = entries
        self.timeZone = timeZone
    }

    /// A constant limit (nil: none).
    public static func constant(_ bytesPerSecond: Int64?) -> BandwidthSchedule {
        BandwidthSchedule(entries: [Entry(minute: 0, bytesPerSecond: bytesPerSecond)])
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            guard number > 0 else { throw ConfigValueError("must be > 0 (off: no limit)") }
            self = .constant(number)
            return
        }
        self = try BandwidthSchedule.parse(try container.decode(String.self))
    }

    /// Parses `10MiB`, `off`, or a timetable of `HH:MM,RATE` entries separated by spaces, in increasing order of
    /// time. Throws a ``ConfigValueError`` naming the entry that is wrong.
    public static func parse(_ text: String, timeZone: TimeZone = .current) throws -> BandwidthSchedule {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard !words.isEmpty else { throw ConfigValueError("is empty (use e.g. 10MiB, off, or \"08:00,512KiB 19:00,off\")") }
        if words.count == 1, !words[0].contains(",") {
            return BandwidthSchedule(entries: [Entry(minute: 0, bytesPerSecond: try rate(words[0]))], timeZone: timeZone)
        }
        var entries: [Entry] = []
        for word in words {
            let parts = word.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, let minute = minuteOfDay(parts[0]) else {
                throw ConfigValueError("'\(word)' is not TIME,RATE (e.g. 08:00,512KiB or 19:00,off; times are HH:MM, 00:00 to 23:59)")
            }
            if let last = entries.last, minute <= last.minute {
                throw ConfigValueError("'\(word)': the times must increase through the day (\(parts[0]) comes after \(clock(last.minute)))")
            }
            entries.append(Entry(minute: minute, bytesPerSecond: try rate(parts[1], in: word)))
        }
        return BandwidthSchedule(entries: entries, timeZone: timeZone)
    }

    /// A rate: a size per second (`512KiB`, `10M`, rclone's `512k`) or `off`.
    private static func rate(_ text: String, in word: String? = nil) throws -> Int64? {
        if text == "off" { return nil }
        var size = text
        // rclone writes `512k`, `10M`: a bare letter is binary, either case.
        if let last = size.last, "kmgt".contains(last) { size = String(size.dropLast()) + last.uppercased() }
        guard let bytes = ByteSize.parse(size)?.bytes else {
            throw ConfigValueError("'\(word ?? text)': '\(text)' is not a rate (use e.g. 512KiB, 10MiB, or off)")
        }
        guard bytes > 0 else { throw ConfigValueError("'\(word ?? text)': a rate must be > 0 (off: no limit)") }
        return bytes
    }

    private static func minuteOfDay(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...2).contains(parts[0].count), parts[1].count == 2,
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let hour = Int(parts[0]), let minute = Int(parts[1]), hour < 24, minute < 60 else { return nil }
        return hour * 60 + minute
    }

    private static func clock(_ minute: Int) -> String { String(format: "%02d:%02d", minute / 60, minute % 60) }

    /// Whether it never limits anything (`off`).
    public var isOff: Bool { entries.allSatisfy { $0.bytesPerSecond == nil } }

    private var calendar: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        return calendar
    }

    /// The entry in force at `date`.
    public func entry(at date: Date) -> Entry {
        guard entries.count > 1 else { return entries[0] }
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        let minute = (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
        return entries.last { $0.minute <= minute } ?? entries[entries.count - 1]
    }

    /// Bytes per second at `date`; nil: no limit then.
    public func bytesPerSecond(at date: Date) -> Int64? { entry(at: date).bytesPerSecond }

    /// The first time after `date` at which another entry takes over (nil for a constant limit).
    public func nextChange(after date: Date) -> Date? {
        guard entries.count > 1 else { return nil }
        let calendar = self.calendar
        let midnight = calendar.startOfDay(for: date)
        for dayOffset in 0...2 {
            guard let day = calendar.date(byAdding: .day, value: dayOffset, to: midnight) else { continue }
            for entry in entries {
                guard let time = calendar.date(bySettingHour: entry.minute / 60, minute: entry.minute % 60, second: 0, of: day) else { continue }
                if time > date { return time }
            }
        }
        return nil
    }

    public var description: String {
        func text(_ rate: Int64?) -> String { rate.map { ByteSize.format($0) + "/s" } ?? "off" }
        if entries.count == 1 { return text(entries[0].bytesPerSecond) }
        return entries.map { "\(BandwidthSchedule.clock($0.minute)),\(text($0.bytesPerSecond))" }.joined(separator: " ")
    }
}
