import Foundation
import Synchronization
import SyncgateTestSupport
import Testing

@testable import SyncgateSheets

/// The write fence asked when the HTTP client is about to send a write's body (``GatedBody``): a refusal then sends
/// no byte of the body, and the caller gets the refusal itself.
struct Lapsed: Error {}

/// A loopback server that reads the `POST /append` request until the client closes it (answering 200 once the whole
/// body came), and keeps what it read. Every connection is served on a thread of its own, and one that is not that
/// request is closed: in a full parallel run, another test's client may connect to the port this listener was given
/// (a port it had found free and is now probing), and a server that accepted only once could take that stray
/// connection and leave the real request unanswered in its backlog.
private final class OneRequestServer: Sendable {
    let port: Int
    private let listener: Int32
    private let received = Mutex<[UInt8]>([])
    private let done = Mutex(false)

    init(bodyLength: Int) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        listen(listener, 16)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = listener
        let fd = listener
        Thread { [self] in
            while true {
                let connection = accept(fd, nil, nil)
                guard connection >= 0 else { return }
                Thread { [self] in serve(connection, bodyLength: bodyLength) }.start()
            }
        }.start()
    }

    private func serve(_ connection: Int32, bodyLength: Int) {
        defer { close(connection) }
        var mine: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var isTheRequest = false
        while true {
            let n = read(connection, &buffer, buffer.count)
            if n <= 0 { break }
            mine += buffer[..<n]
            if !isTheRequest {
                guard let end = Self.headEnd(mine) else { continue }
                guard mine[..<end].starts(with: Array("POST /append ".utf8)) else { return }  // a stray connection
                isTheRequest = true
            }
            received.withLock { $0 = mine }
            if let end = Self.headEnd(mine), mine.count - end >= bodyLength {
                let answer = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-type: application/json\r\n\r\n{}"
                _ = answer.withCString { write(connection, $0, strlen($0)) }
            }
        }
        if isTheRequest { done.withLock { $0 = true } }
    }

    static func headEnd(_ bytes: [UInt8]) -> Int? {
        let marker: [UInt8] = [13, 10, 13, 10]
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where Array(bytes[i..<(i + 4)]) == marker { return i + 4 }
        return nil
    }

    var text: String { String(decoding: received.withLock { $0 }, as: UTF8.self) }
    var closed: Bool { done.withLock { $0 } }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}

@Suite("a write's body goes out only if the fence still holds")
struct GatedBodyTests {
    @Test("refused when the body is asked for: the head went out, no byte of the body, the refusal is thrown")
    func refusedAtTheBody() async throws {
        let body = Array("{\"values\": [[\"secret-row\"]]}".utf8)
        let server = try OneRequestServer(bodyLength: body.count)
        defer { server.stop() }
        let transport = HTTPTransport()
        let asked = Mutex(0)
        await #expect(throws: Lapsed.self) {
            _ = try await transport.send(
                method: .POST, url: "http://127.0.0.1:\(server.port)/append", body: body, timeout: .seconds(30),
                beforeBody: {
                    asked.withLock { $0 += 1 }
                    throw Lapsed()
                })
        }
        await transport.shutdown()
        // The client closes the connection it cannot finish: the server has read all it will ever get.
        let deadline = Date().addingTimeInterval(30)
        while !server.closed, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.closed)
        #expect(asked.withLock { $0 } == 1)
        #expect(server.text.hasPrefix("POST /append HTTP/1.1"), "\(server.text)")
        #expect(!server.text.contains("secret-row"), "the body went out: \(server.text)")
    }

    @Test("holding: the body goes out whole and the answer is read")
    func holdingSendsTheBody() async throws {
        let body = Array("{\"values\": [[\"a-row\"]]}".utf8)
        let server = try OneRequestServer(bodyLength: body.count)
        defer { server.stop() }
        // A stray connection first, as another test's readiness probe would make: it sends nothing and stays open.
        let stray = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(stray) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(server.port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(stray, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(connected == 0)
        let transport = HTTPTransport()
        let answer = try await transport.send(
            method: .POST, url: "http://127.0.0.1:\(server.port)/append", body: body, timeout: .seconds(30), beforeBody: {})
        await transport.shutdown()
        #expect(answer.status == 200)
        #expect(server.text.hasSuffix(String(decoding: body, as: UTF8.self)))
    }
}
