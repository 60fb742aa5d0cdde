#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// systemd's notification protocol, as `Type=notify` services speak it (sd_notify(3)), in a few lines and without
/// libsystemd: datagrams such as `READY=1`, `STOPPING=1`, `WATCHDOG=1`, `STATUS=...` to the socket named by
/// `NOTIFY_SOCKET` (a path, or an abstract name starting with `@`). Outside systemd it does nothing.
struct SystemdNotifier: Sendable {
    let socketPath: String?
    /// How often to say `WATCHDOG=1`: half of `WATCHDOG_USEC`, when the watchdog is set for this process.
    let watchdogInterval: Duration?

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        socketPath = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        if let usec = environment["WATCHDOG_USEC"].flatMap({ Int64($0) }), usec > 0,
           environment["WATCHDOG_PID"].flatMap({ Int32($0) }).map({ $0 == getpid() }) ?? true {
            watchdogInterval = .microseconds(usec / 2)
        } else {
            watchdogInterval = nil
        }
    }

    /// Sends one notification (`READY=1`, or several lines). Errors are ignored: systemd is told, or not there.
    func notify(_ state: String) {
        guard let socketPath else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // an abstract socket name
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count)
        let bytes = Array(state.utf8)
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), sockaddrPointer, length) }
            }
        }
    }
}
