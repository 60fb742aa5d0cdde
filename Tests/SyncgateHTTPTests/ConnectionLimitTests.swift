#if canImport(Glibc)
import Glibc
#endif
import Foundation
import NIOCore
@testable import SyncgateHTTP
import SyncgateTestSupport
import Testing

/// The status server under hostile clients (issue 26), with raw sockets against the in-process server: idle
/// connections are closed to make room for real requests, and at the limit those that bring nothing that could be
/// a request are turned away at the door; heads and bodies that trickle are cut, a body is read only after the
/// access rules passed and never beyond its bound; a client that stops reading is reset after the write-stall
/// limit. Time limits here are shortened (a second or two) and only ever waited for with generous bounds.
@Suite("HTTP connection limits", .timeLimit(.minutes(15)))
struct ConnectionLimitTests {
    static let short = ConnectionLimits(header: .seconds(1), body: .seconds(2), idle: .seconds(2), bodyBytes: 256 << 10)

    /// Waits until `condition` holds (false after `seconds`: a bound against a hang, not a speed).
    static func eventually(_ seconds: Double = 60, _ condition: () -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }

    /// A connection that never sends a request, and one whose head comes a byte at a time, are closed after the
    /// header limit; one kept alive after an answer is closed after the idle limit.
    @Test func silentAndTricklingHeadsAreClosed() async throws {
        let gateway = try TestGateway()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway, limits: ConnectionLimitTests.short)
        let silent = try #require(HostileHTTPClient.open(port: server.port))
        let trickling = try #require(HostileHTTPClient.open(port: server.port))
        defer { close(silent); close(trickling) }
        let head = Array("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".utf8) + Array(repeating: UInt8(ascii: "a"), count: 200)
        var sent = 0
        let closed = await ConnectionLimitTests.eventually {
            if sent < head.count, HostileHTTPClient.trickle(trickling, [head[sent]]) == 1 { sent += 1 }
            return HostileHTTPClient.isClosedByPeer(silent) && HostileHTTPClient.isClosedByPeer(trickling)
        }
        #expect(closed)
        #expect(sent < head.count, "closed while its head was still coming")

        // Kept alive after an answer: closed once idle too long.
        let kept = try #require(HostileHTTPClient.open(port: server.port))
        defer { close(kept) }
        var request = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        #expect(await ConnectionLimitTests.eventually {
            if !request.isEmpty { request.removeFirst(max(0, HostileHTTPClient.trickle(kept, request))) }
            return request.isEmpty
        })
        #expect(await ConnectionLimitTests.eventually { HostileHTTPClient.isClosedByPeer(kept) })
        #expect(await HostileHTTPClient.status(port: server.port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n") == 200)
        try await server.stop()
    }

    /// At the connection limit, the idle connection oldest is closed for a new one: a flood of idle connections
    /// (each sent the first line of a request, so that it is let in even at the limit, and never finishes its head)
    /// never keeps a real request out, and never holds more than the limit.
    @Test func idleConnectionsMakeRoomForRealRequests() async throws {
        let gateway = try TestGateway()
        defer { gateway.stop() }
        let limit = 8
        let server = try await RunningServer(gateway: gateway, maxConnections: limit)
        let firstLine = Array("GET /api/status HTTP/1.1\r\n".utf8)
        var idle: [Int32] = []
        defer { idle.forEach { close($0) } }
        for _ in 0..<(limit * 5) {
            let fd = try #require(HostileHTTPClient.open(port: server.port))
            idle.append(fd)
            #expect(await HostileHTTPClient.sendAll(fd, firstLine))
        }
        for _ in 0..<5 {
            #expect(await HostileHTTPClient.status(port: server.port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n") == 200)
        }
        // The server holds at most `limit` of them (its default header limit is 10 s: these are closed to make room).
        #expect(await ConnectionLimitTests.eventually { idle.filter { !HostileHTTPClient.isClosedByPeer($0) }.count <= limit })
        #expect(idle.filter { HostileHTTPClient.isClosedByPeer($0) }.count >= limit * 4)
        #expect(server.connections.openCount <= limit)
        try await server.stop()
    }

    /// With every place taken, a connection that came with nothing that could be a request (one byte) is closed at
    /// the door, before any HTTP processing, and takes no place from those that hold one; a connection that sends
    /// nothing is not even handed to the server (TCP_DEFER_ACCEPT) until the header limit is over. A real request
    /// still gets in, closing the idle connection oldest. Linux only (the door reads the kernel's TCP_INFO).
    @Test(.enabled(if: TCPInfo.available)) func atTheLimitConnectionsWithoutARequestAreTurnedAwayAtTheDoor() async throws {
        let gateway = try TestGateway()
        defer { gateway.stop() }
        let limit = 8
        let server = try await RunningServer(gateway: gateway, maxConnections: limit)
        let firstLine = Array("GET /api/status HTTP/1.1\r\n".utf8)
        var holding: [Int32] = []
        var knocking: [Int32] = []
        var silent: [Int32] = []
        defer { (holding + knocking + silent).forEach { close($0) } }
        for _ in 0..<limit {
            let fd = try #require(HostileHTTPClient.open(port: server.port))
            holding.append(fd)
            #expect(await HostileHTTPClient.sendAll(fd, firstLine))
        }
        #expect(await ConnectionLimitTests.eventually { server.connections.openCount == limit }, "\(server.connections.openCount)")
        let refusedBefore = server.connections.turnedAway.refused

        for _ in 0..<10 {
            let fd = try #require(HostileHTTPClient.open(port: server.port))
            knocking.append(fd)
            #expect(await HostileHTTPClient.sendAll(fd, Array("G".utf8)))
        }
        for _ in 0..<5 { silent.append(try #require(HostileHTTPClient.open(port: server.port))) }
        // Closed at once (the header limit, 10 s, would take far longer to close them had they taken a place).
        let started = Date()
        #expect(await ConnectionLimitTests.eventually { knocking.allSatisfy { HostileHTTPClient.isClosedByPeer($0) } })
        #expect(Date().timeIntervalSince(started) < 9, "closed by the door, not the header limit")
        #expect(server.connections.turnedAway.refused == refusedBefore + 10)
        #expect(server.connections.turnedAway.evicted == 0)
        #expect(server.connections.openCount == limit)
        #expect(!holding.contains { HostileHTTPClient.isClosedByPeer($0) }, "a place was taken from a connection holding one")
        // The silent ones are still held by the kernel: neither let in nor turned away.
        #expect(!silent.contains { HostileHTTPClient.isClosedByPeer($0) })
        #expect(server.connections.turnedAway.refused == refusedBefore + 10)

        #expect(await HostileHTTPClient.status(port: server.port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n") == 200)
        #expect(await ConnectionLimitTests.eventually { holding.contains { HostileHTTPClient.isClosedByPeer($0) } }, "the healthz request made no room")
        try await server.stop()
    }

    /// A request refused on its headers (no token) is answered at once and its body is not read: the connection
    /// closes. A body beyond the bound is refused (413); one that trickles is cut at the body limit.
    @Test func bodiesAreBoundedAndReadOnlyAfterTheAccessRules() async throws {
        let gateway = try TestGateway()
        defer { gateway.stop() }
        let token = "a-token-of-sixteen-or-more-\(UUID().uuidString)"
        let server = try await RunningServer(gateway: gateway, token: token, limits: ConnectionLimitTests.short)

        // No token: 401 before any of the announced 4 MiB is read, then the connection ends.
        let unauthorized = try #require(HostileHTTPClient.open(port: server.port, receiveBuffer: 65536))
        defer { close(unauthorized) }
        let head = "POST /api/retry HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(4 << 20)\r\n\r\n{"
        var pending = Array(head.utf8)
        var answered = ""
        #expect(await ConnectionLimitTests.eventually {
            if !pending.isEmpty { pending.removeFirst(max(0, HostileHTTPClient.trickle(unauthorized, pending))) }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = recv(unauthorized, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n > 0 { answered += String(decoding: buffer[0..<n], as: UTF8.self) }
            return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        })
        #expect(answered.hasPrefix("HTTP/1.1 401"), "\(answered.prefix(200))")

        // With the token, a body over the bound: 413.
        let big = "{\"paths\": [\"" + String(repeating: "x", count: FileSelection.maxBody) + "\"]}"
        let tooLarge = await HostileHTTPClient.status(port: server.port, """
            POST /api/retry HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\n\
            Content-Length: \(big.utf8.count)\r\nConnection: close\r\n\r\n\(big)
            """)
        #expect(tooLarge == 413 || tooLarge == nil, "refused, or cut while sending")

        // With the token, a body that trickles: cut at the body limit.
        let slow = try #require(HostileHTTPClient.open(port: server.port))
        defer { close(slow) }
        var slowHead = Array("POST /api/retry HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{".utf8)
        let started = Date()
        #expect(await ConnectionLimitTests.eventually {
            if !slowHead.isEmpty { slowHead.removeFirst(max(0, HostileHTTPClient.trickle(slow, slowHead))) } else { HostileHTTPClient.trickle(slow, [UInt8(ascii: " ")]) }
            return HostileHTTPClient.isClosedByPeer(slow)
        })
        #expect(Date().timeIntervalSince(started) >= 1, "not before the body limit")
        #expect(await HostileHTTPClient.status(port: server.port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n") == 200)
        try await server.stop()
    }

    /// `count` requests for `/api/status` in one go (HTTP/1.1 pipelining): answers pile up for a client that does
    /// not read them.
    static func pipelined(_ count: Int) -> [UInt8] {
        Array(String(repeating: "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", count: count).utf8)
    }

    /// A client that asks and never reads: once its socket buffers are full, nothing it was sent goes out, and after
    /// the write-stall limit (2 s here) the connection is reset: its answers and its place are let go.
    @Test func aClientThatNeverReadsIsResetAfterTheWriteStall() async throws {
        let gateway = try TestGateway()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway, limits: ConnectionLimits(writeStall: .seconds(2)))
        let fd = try #require(HostileHTTPClient.open(port: server.port, receiveBuffer: 4096))
        defer { close(fd) }
        var requests = ConnectionLimitTests.pipelined(5_000)[...]
        let reset = await ConnectionLimitTests.eventually {
            // What the socket takes of the requests (the server stops reading them once its answers back up).
            if !requests.isEmpty {
                let sent = HostileHTTPClient.trickle(fd, Array(requests.prefix(65536)))
                if sent > 0 { requests = requests.dropFirst(sent) }
            }
            return HostileHTTPClient.tcpState(fd) == 7
        }
        #expect(reset, "TCP state \(HostileHTTPClient.tcpState(fd).map(String.init) ?? "?")")
        #expect(await ConnectionLimitTests.eventually { server.connections.openCount == 0 })
        #expect(await HostileHTTPClient.status(port: server.port, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n") == 200)
        try await server.stop()
    }

    /// A client that reads slowly but steadily (4 KiB every 100 ms) is not cut, though its answers wait far longer
    /// than the write-stall limit (3 s here); once it stops reading, it is.
    @Test func aSlowReaderIsNotCutUntilItStops() async throws {
        let gateway = try TestGateway()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway, limits: ConnectionLimits(writeStall: .seconds(3)))
        let fd = try #require(HostileHTTPClient.open(port: server.port, receiveBuffer: 4096))
        defer { close(fd) }
        // On a thread of its own, so that a busy test pool cannot make the reader look stalled.
        let (read, stateAfter) = await withCheckedContinuation { (done: CheckedContinuation<(Int, UInt8?), Never>) in
            Thread {
                var requests = ConnectionLimitTests.pipelined(2_000)[...]
                var buffer = [UInt8](repeating: 0, count: 4096)
                var total = 0
                let until = Date().addingTimeInterval(12)
                while Date() < until, HostileHTTPClient.tcpState(fd) != 7 {
                    if !requests.isEmpty {
                        let sent = HostileHTTPClient.trickle(fd, Array(requests.prefix(65536)))
                        if sent > 0 { requests = requests.dropFirst(sent) }
                    }
                    let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                    if n > 0 { total += n }
                    usleep(100_000)
                }
                done.resume(returning: (total, HostileHTTPClient.tcpState(fd)))
            }.start()
        }
        #expect(stateAfter == 1, "cut while it read (TCP state \(stateAfter.map(String.init) ?? "?"), \(read) bytes read)")
        #expect(read > 100_000, "\(read) bytes read in 12 s")
        #expect(await ConnectionLimitTests.eventually { HostileHTTPClient.tcpState(fd) == 7 }, "not reset once it stopped reading")
        try await server.stop()
    }

    /// A stream's backlog is bounded in bytes and drops its oldest batches in constant time, counting the events
    /// they held.
    @Test func anEventBacklogDropsItsOldestAndCountsThem() async throws {
        let backlog = EventBacklog(capacity: 1000)
        let message = String(repeating: "m", count: 98) + "\n\n"
        for _ in 0..<100_000 { backlog.append(EventBacklog.Batch(bytes: ByteBuffer(string: message + message), events: 2)) }
        #expect(backlog.heldBytes <= 1000)
        let taken = try #require(await backlog.takeAll())
        #expect(taken.batches.count == 5)
        #expect(taken.dropped == 2 * (100_000 - 5))
        backlog.finish()
        #expect(await backlog.takeAll() == nil)
        #expect(EventStream.droppedChunk(7) == "data: {\"event\":\"dropped\",\"count\":7}\n\n")
    }
}
