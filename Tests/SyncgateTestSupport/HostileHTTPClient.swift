#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Raw TCP clients of an HTTP server on 127.0.0.1 that behave badly on purpose (issue 26): connections that never
/// send a request, request heads sent a byte at a time, bodies that trickle, streams never read. Plain sockets, so
/// that nothing between the test and the server is polite on its behalf.
public enum HostileHTTPClient {
    /// A non-blocking connection to 127.0.0.1:port, its handshake perhaps still under way (nil: no descriptor
    /// left, or refused at once). `receiveBuffer`: SO_RCVBUF, for a client that should fill up fast.
    public static func open(port: Int, receiveBuffer: Int? = nil) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        if var size = receiveBuffer.map(Int32.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if result != 0 && errno != EINPROGRESS {
            close(fd)
            return nil
        }
        return fd
    }

    /// Sends what the socket takes now (non-blocking); the bytes sent, 0 when it takes nothing now, -1 when the
    /// connection is gone.
    @discardableResult
    public static func trickle(_ fd: Int32, _ bytes: [UInt8]) -> Int {
        let sent = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if sent >= 0 { return sent }
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINPROGRESS || errno == ENOTCONN ? 0 : -1
    }

    /// Sends all of `bytes` (waiting with `Task.sleep` while the socket takes nothing); false when the connection
    /// is gone or `timeout` seconds passed first.
    public static func sendAll(_ fd: Int32, _ bytes: [UInt8], timeout: TimeInterval = 60) async -> Bool {
        var pending = bytes[...]
        let deadline = Date().addingTimeInterval(timeout)
        while !pending.isEmpty {
            let sent = trickle(fd, Array(pending))
            if sent < 0 || Date() > deadline { return false }
            pending = pending.dropFirst(sent)
            if sent == 0 { try? await Task.sleep(for: .milliseconds(5)) }
        }
        return true
    }

    /// The kernel's TCP state of the connection (`tcpi_state`: 1 established, 7 closed, e.g. after a reset, 8
    /// close-wait after the peer's FIN), read without touching what it received (nil where it cannot be read).
    public static func tcpState(_ fd: Int32) -> UInt8? {
        #if os(Linux)
        var info = [UInt8](repeating: 0, count: 104)
        var length = socklen_t(info.count)
        guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &info, &length) == 0, length > 0 else { return nil }
        return info[0]
        #else
        return nil
        #endif
    }

    /// Whether the server has closed the connection (an end of stream or a reset seen now; what it sent before
    /// is read and thrown away). Never waits.
    public static func isClosedByPeer(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 { continue }
            if n == 0 { return true }
            return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOTCONN || errno == EINPROGRESS)
        }
    }

    /// One request on a new connection (`Connection: close`), waiting at most `timeout` seconds for the connection
    /// and the whole answer; the answer's status (nil: no answer in time, or the connection was refused or cut).
    /// It waits with `Task.sleep`, never blocking a thread of the cooperative pool (an in-process server's handlers
    /// and the other tests of the process need them).
    public static func status(port: Int, _ request: String, timeout: TimeInterval = 60) async -> Int? {
        guard let fd = open(port: port) else { return nil }
        defer { close(fd) }
        let deadline = Date().addingTimeInterval(timeout)
        var pending = Array(request.utf8)
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while Date() < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN) | (pending.isEmpty ? 0 : Int16(POLLOUT)), revents: 0)
            if poll(&poller, 1, 0) == 0 {
                try? await Task.sleep(for: .milliseconds(10))
                continue
            }
            switch exchange(fd, poller.revents, &pending, &answer, &buffer) {
            case .failed: return nil
            case .ended: return statusCode(answer)
            case .going: continue
            }
        }
        return statusCode(answer)
    }

    /// ``status(port:_:timeout:)`` on a thread of its own that waits in `poll()`: woken by the kernel the moment the
    /// connection is up or the answer comes, so that what it measures is the server's time, not how soon a busy test
    /// pool runs a polling task again. Also the seconds from before `connect()` to the end of the answer.
    public static func statusWaitingInPoll(port: Int, _ request: String, timeout: TimeInterval = 60) async -> (status: Int?, seconds: Double) {
        await withCheckedContinuation { (done: CheckedContinuation<(status: Int?, seconds: Double), Never>) in
            Thread {
                let started = Date()
                let status = blockingStatus(port: port, request, timeout: timeout)
                done.resume(returning: (status, Date().timeIntervalSince(started)))
            }.start()
        }
    }

    private static func blockingStatus(port: Int, _ request: String, timeout: TimeInterval) -> Int? {
        guard let fd = open(port: port) else { return nil }
        defer { close(fd) }
        let deadline = Date().addingTimeInterval(timeout)
        var pending = Array(request.utf8)
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { break }
            var poller = pollfd(fd: fd, events: Int16(POLLIN) | (pending.isEmpty ? 0 : Int16(POLLOUT)), revents: 0)
            if poll(&poller, 1, Int32(min(left * 1000, 60_000)) + 1) <= 0 { continue }
            switch exchange(fd, poller.revents, &pending, &answer, &buffer) {
            case .failed: return nil
            case .ended: return statusCode(answer)
            case .going: continue
            }
        }
        return statusCode(answer)
    }

    private enum Exchange { case going, ended, failed }

    /// One round of a request and its answer on a non-blocking socket, after `poll()` gave `revents`: sends what is
    /// pending when it may, reads what arrived.
    private static func exchange(_ fd: Int32, _ revents: Int16, _ pending: inout [UInt8], _ answer: inout [UInt8], _ buffer: inout [UInt8]) -> Exchange {
        if !pending.isEmpty, revents & Int16(POLLOUT) != 0 {
            let sent = trickle(fd, pending)
            if sent < 0 { return .failed }
            pending.removeFirst(sent)
        }
        if revents & (Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)) != 0 {
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 { answer.append(contentsOf: buffer[0..<n]); return .going }
            if n == 0 || !(errno == EAGAIN || errno == EWOULDBLOCK) { return .ended }
        }
        return .going
    }

    /// The status of an HTTP/1.1 answer; nil when it is not one.
    private static func statusCode(_ answer: [UInt8]) -> Int? {
        let text = String(decoding: answer, as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 "), let status = Int(text.dropFirst(9).prefix(3)) else { return nil }
        return status
    }

    /// Raises this process's soft descriptor limit to `wanted` (or the hard limit, if lower); the limit after.
    @discardableResult
    public static func raiseDescriptorLimit(to wanted: Int) -> Int {
        var limit = rlimit()
        #if canImport(Glibc)
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return 0 }
        let target = min(rlim_t(wanted), limit.rlim_max)
        if limit.rlim_cur < target {
            limit.rlim_cur = target
            _ = setrlimit(resource, &limit)
            _ = getrlimit(resource, &limit)
        }
        return Int(limit.rlim_cur)
    }

    /// Descriptors `pid` holds open now (nil: it cannot be read).
    public static func openDescriptors(of pid: Int32) -> Int? {
        try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
    }

    /// CPU seconds `pid` has used (user and system), from `/proc/PID/stat` (nil: it cannot be read).
    public static func cpuSeconds(of pid: Int32) -> Double? {
        cpuTimes(of: pid).map { $0.user + $0.system }
    }

    /// The CPU seconds `pid` spent so far in its own code and in the kernel, apart: the kernel's share moves with
    /// what the file systems are doing (creating files right after many were deleted costs ext4 far more), its own
    /// share with its own work.
    public static func cpuTimes(of pid: Int32) -> (user: Double, system: Double)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command: state is field 3; utime and stime are fields 14 and 15.
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (user / tick, system / tick)
    }
}
