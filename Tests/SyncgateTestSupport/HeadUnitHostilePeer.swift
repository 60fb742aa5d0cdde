#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A TCP server on loopback that plays a head unit gone wrong. Either one-shot: it answers the first bytes it
/// receives with fixed bytes (say, a frame header announcing 4 GiB), then keeps the connection open for a while; or
/// scripted: every accepted connection runs `behaviour` on a thread of its own with a ``HeadUnitPeerSocket`` (flood
/// heartbeats without reading, hold half-sent messages open, answer nothing, ...). ``stop()`` ends them all.
public final class HeadUnitHostilePeer: @unchecked Sendable {
    public let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var sockets: [HeadUnitPeerSocket] = []
    private var accepted = 0
    private var stopped = false

    /// Connections accepted so far.
    public var connections: Int { lock.withLock { accepted } }

    public convenience init(answer: [UInt8], holdOpen: TimeInterval = 5) throws {
        try self.init(maxConnections: 1) { socket in
            guard socket.receive(upTo: 4096) != nil else { return }
            _ = socket.send(answer)
            socket.hold(holdOpen)
        }
    }

    /// Runs `behaviour` for each connection (at most `maxConnections`); the connection closes when it returns.
    /// `receiveBuffer` sets SO_RCVBUF of accepted sockets (small: a peer that does not read fills up sooner).
    public init(
        maxConnections: Int = 64, receiveBuffer: Int? = nil, _ behaviour: @escaping @Sendable (HeadUnitPeerSocket) -> Void
    ) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        if var size = receiveBuffer.map(Int32.init) {
            // Set on the listener so that accepted sockets start with it (the window is negotiated at the handshake).
            setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, len) } }
        guard bound == 0, listen(listener, 16) == 0 else {
            close(listener)
            throw HeadUnitSimulatorProcess.SimulatorError("cannot listen on loopback")
        }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &len) } }
        self.port = Int(UInt16(bigEndian: addr.sin_port))
        let thread = Thread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                let socket = HeadUnitPeerSocket(fd: client)
                let admitted: Bool = lock.withLock {
                    guard !stopped, accepted < maxConnections else { return false }
                    accepted += 1
                    sockets.append(socket)
                    return true
                }
                guard admitted else {
                    socket.shutDown()
                    continue
                }
                let worker = Thread {
                    behaviour(socket)
                    socket.shutDown()
                }
                worker.start()
            }
        }
        thread.start()
    }

    deinit { stop() }

    /// Stops accepting and ends every connection (a behaviour blocked in a send or receive returns).
    public func stop() {
        let open: [HeadUnitPeerSocket] = lock.withLock {
            let wasStopped = stopped
            stopped = true
            if !wasStopped {
                shutdown(listener, Int32(SHUT_RDWR))
                close(listener)
            }
            return sockets
        }
        for socket in open { socket.shutDown() }
    }
}
