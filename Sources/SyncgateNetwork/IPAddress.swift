#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 address as its bytes (4 or 16), read from its usual text form (`127.0.0.1`, `::1`, `[::1]`),
/// with the prefix comparison CIDR ranges need.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// Nil when `text` is not an address literal (a host name, an address with a port).
    public init?(_ text: some StringProtocol) {
        var literal = String(text)
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        // A zone (`fe80::1%eth0`) is not part of what is compared.
        if let percent = literal.firstIndex(of: "%") { literal = String(literal[..<percent]) }
        if literal.contains(":") {
            var address = in6_addr()
            guard inet_pton(AF_INET6, literal, &address) == 1 else { return nil }
            bytes = withUnsafeBytes(of: &address) { Array($0) }
        } else {
            // inet_pton takes only the dotted quad (no `127.1`, no octal), which is what a NO_PROXY entry means.
            var address = in_addr()
            guard inet_pton(AF_INET, literal, &address) == 1 else { return nil }
            bytes = withUnsafeBytes(of: &address) { Array($0) }
        }
    }

    public var isIPv6: Bool { bytes.count == 16 }

    /// Loopback: 127.0.0.0/8 or ::1.
    public var isLoopback: Bool {
        isIPv6 ? bytes == [UInt8](repeating: 0, count: 15) + [1] : bytes[0] == 127
    }

    /// Whether the first `prefix` bits of both addresses (of the same family) are equal.
    public func sharesPrefix(_ prefix: Int, with other: IPAddress) -> Bool {
        guard bytes.count == other.bytes.count, prefix >= 0, prefix <= bytes.count * 8 else { return false }
        let whole = prefix / 8
        guard bytes[..<whole] == other.bytes[..<whole] else { return false }
        let rest = prefix % 8
        guard rest > 0 else { return true }
        let mask = UInt8(0xFF) << UInt8(8 - rest)
        return bytes[whole] & mask == other.bytes[whole] & mask
    }

    public var description: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        var copy = bytes
        let family = isIPv6 ? AF_INET6 : AF_INET
        guard inet_ntop(family, &copy, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
