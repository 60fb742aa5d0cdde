#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// One connection of a ``HeadUnitHostilePeer``: blocking sends and receives of raw bytes and SDL frames, for a
/// behaviour running on a thread of its own.
public final class HeadUnitPeerSocket: @unchecked Sendable {
    private let fd: Int32
    private let lock = NSLock()
    private var closed = false

    init(fd: Int32) { self.fd = fd }

    deinit {
        shutDown()
        close(fd)  // only here, once no thread can use the descriptor any more
    }

    /// Whether the connection was shut down (by ``shutDown()`` or the peer's stop).
    public var isClosed: Bool { lock.withLock { closed } }

    /// Sends all of `bytes`; false when the connection failed or was shut down (blocks while the other side does
    /// not read and the buffers are full).
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    /// Receives what is there (at most `count` bytes), waiting up to `timeout` seconds; nil when the connection
    /// closed or nothing came in time.
    public func receive(upTo count: Int, timeout: TimeInterval = 10) -> [UInt8]? {
        guard wait(timeout) else { return nil }
        var chunk = [UInt8](repeating: 0, count: max(count, 1))
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return nil }
        return Array(chunk[0..<n])
    }

    /// Reads exactly `count` bytes within `timeout` seconds; nil otherwise.
    public func read(_ count: Int, timeout: TimeInterval = 10) -> [UInt8]? {
        let deadline = Date().addingTimeInterval(timeout)
        var out: [UInt8] = []
        while out.count < count {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let more = receive(upTo: count - out.count, timeout: left) else { return nil }
            out += more
        }
        return out
    }

    /// Reads one SDL frame (an 8-byte header for protocol 1, else 12, then the payload it announces).
    public func readFrame(timeout: TimeInterval = 10) -> (header: [UInt8], payload: [UInt8])? {
        guard let first = read(1, timeout: timeout) else { return nil }
        let headerSize = (first[0] >> 4) == 1 ? 8 : 12
        guard let rest = read(headerSize - 1, timeout: timeout) else { return nil }
        let header = first + rest
        let size = Int(header[4]) << 24 | Int(header[5]) << 16 | Int(header[6]) << 8 | Int(header[7])
        guard size <= 32 << 20, let payload = read(size, timeout: timeout) else { return nil }
        return (header, payload)
    }

    /// Keeps the connection open without reading for `seconds`, or until it is shut down.
    public func hold(_ seconds: TimeInterval) {
        let deadline = Date().addingTimeInterval(seconds)
        while !isClosed, Date() < deadline { usleep(20_000) }
    }

    /// Waits (without reading) until the other side closes the connection or `timeout` passes; true when it closed.
    public func waitForPeerClose(timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            guard wait(deadline.timeIntervalSinceNow) else { return false }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return true }
        }
        return false
    }

    private func wait(_ timeout: TimeInterval) -> Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, Int32(max(0, min(timeout, 3600)) * 1000))
        return ready > 0
    }

    /// Ends the connection (both directions): a send or receive blocked on it returns. The descriptor itself is
    /// closed when the socket is released.
    public func shutDown() {
        let first: Bool = lock.withLock {
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}
