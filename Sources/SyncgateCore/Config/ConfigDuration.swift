/// A duration written as `250ms`, `1s`, `1.5s`, `5m`, `1h`, `7d` (or a bare number of seconds).
public struct ConfigDuration: Sendable, Hashable, Decodable, CustomStringConvertible {
    public var duration: Duration

    public init(_ duration: Duration) { self.duration = duration }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let parsed = ConfigDuration.parse(text) else {
            throw ConfigValueError("'\(text)' is not a duration (use a number with ms, s, m, h or d, e.g. 1s, 250ms, 5m)")
        }
        self = parsed
    }

    public static func parse(_ raw: String) -> ConfigDuration? {
        let text = raw.trimmingCharacters(in: .whitespaces)
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86400)]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count).trimmingCharacters(in: .whitespaces)
            // "ms" must not be read as "m" + "s": the loop tries "ms" first.
            guard let value = Double(number), value.isFinite, value >= 0, value * factor <= 10 * 365 * 86400 else {
                return nil
            }
            return ConfigDuration(.milliseconds(Int64((value * factor * 1000).rounded())))
        }
        if let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds <= 10 * 365 * 86400 {
            return ConfigDuration(.milliseconds(Int64((seconds * 1000).rounded())))
        }
        return nil
    }

    public var description: String { duration.syncgateText }
}

extension Duration {
    /// Seconds as a Double.
    public var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }

    /// Compact text: `250ms`, `1.5s`, `2m`, `1h`.
    public var syncgateText: String {
        let s = seconds
        if s < 1 { return "\(Int((s * 1000).rounded()))ms" }
        if s < 60 { return s == s.rounded() ? "\(Int(s))s" : String(format: "%.1fs", s) }
        if s < 3600, s.truncatingRemainder(dividingBy: 60) == 0 { return "\(Int(s / 60))m" }
        if s.truncatingRemainder(dividingBy: 3600) == 0 && s < 86400 * 2 { return "\(Int(s / 3600))h" }
        if s.truncatingRemainder(dividingBy: 86400) == 0 { return "\(Int(s / 86400))d" }
        return String(format: "%.0fs", s)
    }
}

import Foundation
