#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// What systemd listens on for `Type=notify` services: a datagram socket at a path (`NOTIFY_SOCKET`). Collects every
/// notification a process sends (`READY=1`, `WATCHDOG=1`, `STOPPING=1`, ...), on a thread of its own.
public final class NotifySocket: @unchecked Sendable {
    public let path: String
    private let fd: Int32
    private let lock = NSLock()
    private var received: [String] = []
    private var closed = false

    public init(in folder: TemporaryDirectory) throws {
        path = folder.file("notify.sock").path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw POSIXError(.ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in bytes.enumerated() { raw[i] = b } }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EINVAL) }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let thread = Thread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !lock.withLock({ closed }) {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n > 0 {
                    let text = String(decoding: buffer[0..<n], as: UTF8.self)
                    lock.withLock { received.append(text) }
                }
            }
            close(fd)
        }
        thread.start()
    }

    /// Every notification so far, one string per datagram.
    public var messages: [String] { lock.withLock { received } }

    /// Whether a datagram so far holds `line` (`READY=1`).
    public func got(_ line: String) -> Bool {
        messages.contains { $0.split(separator: "\n").contains { $0 == line } }
    }

    public func stop() { lock.withLock { closed = true } }
}
