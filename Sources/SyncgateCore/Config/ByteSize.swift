/// A byte count written as `16MiB`, `8MB`, `512KiB`, `1GiB` or a bare number of bytes.
public struct ByteSize: Sendable, Hashable, Decodable, CustomStringConvertible {
    public var bytes: Int64

    public init(_ bytes: Int64) { self.bytes = bytes }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) {
            guard number >= 0 else { throw ConfigValueError("must be >= 0") }
            self.bytes = number
            return
        }
        let text = try container.decode(String.self)
        guard let parsed = ByteSize.parse(text) else {
            throw ConfigValueError("'\(text)' is not a size (use e.g. 8MiB, 512KiB, 1GiB, 1000000)")
        }
        self = parsed
    }

    public static func parse(_ raw: String) -> ByteSize? {
        let text = raw.trimmingCharacters(in: .whitespaces)
        let units: [(String, Int64)] = [
            ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40),
            ("KB", 1000), ("MB", 1_000_000), ("GB", 1_000_000_000), ("TB", 1_000_000_000_000),
            ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("B", 1),
        ]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count).trimmingCharacters(in: .whitespaces)
            guard let value = Double(number), value.isFinite, value >= 0, value * Double(factor) < 9.0e18 else { return nil }
            return ByteSize(Int64(value * Double(factor)))
        }
        if let value = Int64(text), value >= 0 { return ByteSize(value) }
        return nil
    }

    public var description: String { ByteSize.format(bytes) }

    /// Human text: `4.0 KiB`, `40.0 MiB`.
    public static func format(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var index = 0
        while value >= 1024, index < units.count - 1 {
            value /= 1024
            index += 1
        }
        guard index > 0 else { return "\(bytes) B" }
        // One decimal, rounded half to even as printf's `%.1f` does (without printf's cost: this runs per file).
        let tenths = Int64((value * 10).rounded(.toNearestOrEven))
        return "\(tenths / 10).\(tenths % 10) \(units[index])"
    }
}

import Foundation
