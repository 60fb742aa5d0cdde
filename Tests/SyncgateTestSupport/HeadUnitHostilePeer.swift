#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A one-shot TCP server on loopback that answers the first bytes it receives with fixed bytes (say, a frame
/// header announcing 4 GiB), then keeps the connection open for a while: a head unit gone wrong.
public final class HeadUnitHostilePeer: @unchecked Sendable {
    public let port: Int
    private let listener: Int32
    private let thread: Thread

    public init(answer: [UInt8], holdOpen: TimeInterval = 5) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, len) } }
        guard bound == 0, listen(listener, 4) == 0 else {
            close(listener)
            throw HeadUnitSimulatorProcess.SimulatorError("cannot listen on loopback")
        }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &len) } }
        self.port = Int(UInt16(bigEndian: addr.sin_port))
        let fd = listener
        thread = Thread {
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            var buffer = [UInt8](repeating: 0, count: 4096)
            _ = recv(client, &buffer, buffer.count, 0)
            _ = answer.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            Thread.sleep(forTimeInterval: holdOpen)
            close(client)
        }
        thread.start()
    }

    deinit { stop() }

    public func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
