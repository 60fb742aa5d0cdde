#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether a host to listen on is this machine's alone, judged by what it resolves to (`getaddrinfo`, as the
/// listener's bind does), never by how it is spelled: `127.gateway.test` is a name like any other.
public enum LoopbackAddress {
    /// True when `host` (an address or a name) resolves to at least one address and every one of them is in
    /// 127.0.0.0/8 or is ::1 (or an IPv4-mapped 127.x.x.x). A name that does not resolve is not loopback.
    public static func resolvesOnlyToLoopback(_ host: String) -> Bool {
        let addresses = resolve(host)
        return !addresses.isEmpty && addresses.allSatisfy(isLoopback)
    }

    /// The addresses `host` resolves to, as raw bytes (4 for IPv4, 16 for IPv6); empty when it does not resolve.
    public static func resolve(_ host: String) -> [[UInt8]] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var found: [[UInt8]] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let address = entry.pointee.ai_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET:
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        var raw = v4.pointee.sin_addr
                        found.append(withUnsafeBytes(of: &raw) { Array($0) })
                    }
                case AF_INET6:
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        var raw = v6.pointee.sin6_addr
                        found.append(withUnsafeBytes(of: &raw) { Array($0) })
                    }
                default:
                    break
                }
            }
            cursor = entry.pointee.ai_next
        }
        return found
    }

    /// 127.0.0.0/8, ::1, or ::ffff:127.x.x.x.
    static func isLoopback(_ bytes: [UInt8]) -> Bool {
        switch bytes.count {
        case 4: return bytes[0] == 127
        case 16:
            if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
            return bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
        default: return false
        }
    }
}
