#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A blocking TCP client for byte-level tests against the head-unit simulator: sends raw frames and reads raw
/// bytes with a time limit.
public final class HeadUnitRawClient: @unchecked Sendable {
    private let fd: Int32
    private var buffered: [UInt8] = []

    public init(port: Int, timeout: TimeInterval = 5) throws {
        guard let fd = Loopback.connect(port: port, timeout: timeout) else {
            throw HeadUnitSimulatorProcess.SimulatorError("cannot connect to 127.0.0.1:\(port)")
        }
        self.fd = fd
    }

    deinit { close(fd) }

    public func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw HeadUnitSimulatorProcess.SimulatorError("send failed: errno \(errno)") }
            sent += n
        }
    }

    /// Reads exactly `count` bytes; nil when the peer closed or the time limit passed first.
    public func read(_ count: Int) -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while buffered.count < count {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return nil }
            buffered.append(contentsOf: chunk[0..<n])
        }
        let out = Array(buffered[0..<count])
        buffered.removeFirst(count)
        return out
    }

    /// Reads one SDL frame: its header (8 bytes for v1, else 12) and payload.
    public func readFrame() -> (header: [UInt8], payload: [UInt8])? {
        guard let first = read(1) else { return nil }
        let headerSize = (first[0] >> 4) == 1 ? 8 : 12
        guard let rest = read(headerSize - 1) else { return nil }
        let header = first + rest
        let size = Int(header[4]) << 24 | Int(header[5]) << 16 | Int(header[6]) << 8 | Int(header[7])
        guard size <= 32 << 20, let payload = read(size) else { return nil }
        return (header, payload)
    }

    /// True when the peer closed the connection (reads return 0 before the time limit).
    public func peerClosed() -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, 0) == 0
    }
}
