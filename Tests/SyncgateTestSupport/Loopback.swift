#if canImport(Glibc)
import Glibc
private let systemConnect = Glibc.connect
#elseif canImport(Darwin)
import Darwin
private let systemConnect = Darwin.connect
#endif
import Foundation

/// Loopback helpers: free ports and waiting for a server to listen.
public enum Loopback {
    /// A TCP port on 127.0.0.1 that was free a moment ago, for a server a test is about to start. It is taken
    /// below Linux's ephemeral range (32768-60999), so an outgoing connection of any process cannot grab it
    /// before the server binds, and never handed out twice in one test run, so two tests starting servers at
    /// the same moment cannot pick the same one.
    public static func freePort() -> Int {
        portLock.lock()
        defer { portLock.unlock() }
        for _ in 0..<2000 {
            let candidate = Int.random(in: 20000...32000)
            if handedOut.contains(candidate) { continue }
            if canBind(port: candidate) {
                handedOut.insert(candidate)
                return candidate
            }
        }
        // Practically unreachable: let the kernel choose.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = loopbackAddress(port: 0)
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    private static let portLock = NSLock()
    nonisolated(unsafe) private static var handedOut = Set<Int>()

    private static func canBind(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var addr = loopbackAddress(port: port)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return bound == 0
    }

    private static func loopbackAddress(port: Int) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return addr
    }

    /// Whether something accepts TCP connections on 127.0.0.1:port.
    public static func isListening(port: Int) -> Bool {
        guard let fd = connect(port: port) else { return false }
        close(fd)
        return true
    }

    /// A blocking TCP connection to 127.0.0.1:port (reads give up after `timeout`, when given), or nil when
    /// nothing accepts it. The caller closes the descriptor.
    public static func connect(port: Int, timeout: TimeInterval? = nil) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        if let timeout {
            var tv = timeval(tv_sec: Int(timeout), tv_usec: __suseconds_t((timeout - timeout.rounded(.down)) * 1_000_000))
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        }
        var addr = loopbackAddress(port: port)
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemConnect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Waits until 127.0.0.1:port accepts connections; false after `timeout` seconds, or as soon as `alive`
    /// says the server that should listen there has exited (a bad flag, say), so a test fails at once.
    public static func waitForListener(
        port: Int, timeout: TimeInterval = 30, while alive: () -> Bool = { true }
    ) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if isListening(port: port) { return true }
            guard alive() else { return false }
            try? await Task.sleep(for: .milliseconds(50))
        }
        // Once more after the deadline: a loaded full run can hold this task past it in one sleep, while the server
        // came up meanwhile.
        return isListening(port: port)
    }
}
