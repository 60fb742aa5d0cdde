#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import SyncgateTestSupport

/// Hostile clients of an HTTP server on 127.0.0.1, kept up until stopped, on a thread of their own (issue 26):
/// `idle` connections that never complete a request (every other one sends its head a byte a second), and
/// `slowBodies` POSTs announcing 4 MiB bodies sent 8 KiB at a time. A connection the server closes is replaced (a
/// few hundred a round at most), so the pressure stays; the descriptors the server process holds are sampled.
final class HostileAttack: Sendable {
    struct Figures: Sendable, CustomStringConvertible {
        var opened = 0
        var closedByServer = 0
        var peakDescriptors = 0
        var description: String { "opened \(opened), closed by the server \(closedByServer), server descriptors at most \(peakDescriptors)" }
    }

    private struct State: ~Copyable {
        var figures = Figures()
        var stopping = false
        var stopped = false
    }

    let port: Int
    let idle: Int
    let slowBodies: Int
    let watching: Int32
    private let state = Mutex(State())

    init(port: Int, idle: Int, slowBodies: Int, watching pid: Int32) {
        self.port = port
        self.idle = idle
        self.slowBodies = slowBodies
        self.watching = pid
    }

    var figures: Figures { state.withLock { $0.figures } }
    var stopped: Bool { state.withLock { $0.stopped } }
    func stop() { state.withLock { $0.stopping = true } }

    private struct Client {
        var fd: Int32
        var sent = 0
    }

    /// Runs until ``stop()``; closes every connection it holds before it returns.
    func run() {
        let head = Array("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow\r\nX-Pad: ".utf8) + Array(repeating: UInt8(ascii: "a"), count: 4096)
        let postHead = Array("POST /api/retry HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(4 << 20)\r\n\r\n".utf8)
        let chunk = Array(repeating: UInt8(ascii: " "), count: 8192)
        var idlers: [Client] = []
        var posters: [Client] = []
        var round = 0
        while !state.withLock({ $0.stopping }) {
            round += 1
            var opened = 0, closed = 0, budget = 300
            // Replace what the server closed, then top up (a few hundred a round: a flood, not a fork bomb).
            for index in idlers.indices.reversed() where HostileHTTPClient.isClosedByPeer(idlers[index].fd) {
                close(idlers[index].fd)
                idlers.remove(at: index)
                closed += 1
            }
            for index in posters.indices.reversed() where HostileHTTPClient.isClosedByPeer(posters[index].fd) {
                close(posters[index].fd)
                posters.remove(at: index)
                closed += 1
            }
            while posters.count < slowBodies, budget > 0, let fd = HostileHTTPClient.open(port: port) {
                posters.append(Client(fd: fd))
                opened += 1
                budget -= 1
            }
            while idlers.count < idle, budget > 0, let fd = HostileHTTPClient.open(port: port) {
                idlers.append(Client(fd: fd))
                opened += 1
                budget -= 1
            }
            // Every other idle connection sends one more byte of its head each second (5 rounds).
            if round % 5 == 0 {
                for index in idlers.indices where index % 2 == 0 && idlers[index].sent < head.count {
                    if HostileHTTPClient.trickle(idlers[index].fd, [head[idlers[index].sent]]) == 1 { idlers[index].sent += 1 }
                }
            }
            // The bodies: the head at once, then 8 KiB a round.
            for index in posters.indices {
                if posters[index].sent < postHead.count {
                    let sent = HostileHTTPClient.trickle(posters[index].fd, Array(postHead[posters[index].sent...]))
                    if sent > 0 { posters[index].sent += sent }
                } else if posters[index].sent < postHead.count + (4 << 20) {
                    let sent = HostileHTTPClient.trickle(posters[index].fd, chunk)
                    if sent > 0 { posters[index].sent += sent }
                }
            }
            let descriptors = HostileHTTPClient.openDescriptors(of: watching) ?? 0
            state.withLock { state in
                state.figures.opened += opened
                state.figures.closedByServer += closed
                state.figures.peakDescriptors = max(state.figures.peakDescriptors, descriptors)
            }
            usleep(200_000)
        }
        for client in idlers + posters { close(client.fd) }
        state.withLock { $0.stopped = true }
    }
}
