import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SyncgateCore

/// One HTTP exchange's answer, its body read whole (Sheets answers are small JSON documents; reads are bounded).
struct HTTPAnswer: Sendable {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }
    var contentType: String { headers.first(name: "content-type")?.lowercased() ?? "" }
}

/// Thrown when no HTTP answer came back (connection refused or lost, timeout). For a write, whether the server
/// applied it is then unknown.
struct TransportError: Error, Sendable, CustomStringConvertible {
    var url: String
    var underlying: String
    var description: String { "no answer from \(url): \(underlying)" }
}

/// The plugin's HTTP client, created on first use (the factory does no network work) and shut down by
/// ``shutdown()`` (a later request creates a new one). Redirects are never followed automatically.
actor HTTPTransport {
    private var client: HTTPClient?
    private let connectTimeout: TimeAmount

    init(connectTimeout: Duration = .seconds(10)) {
        self.connectTimeout = .milliseconds(Int64(connectTimeout.seconds * 1000))
    }

    deinit {
        // finish() was not called (e.g. the destination was dropped after `validate`): shut the client down
        // without waiting, rather than leak it.
        client?.shutdown { _ in }
    }

    private func current() -> HTTPClient {
        if let client { return client }
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        configuration.timeout.connect = connectTimeout
        configuration.decompression = .disabled
        let made = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        client = made
        return made
    }

    /// Performs one request. Throws ``TransportError`` when no answer came back.
    func send(
        method: HTTPMethod, url: String, headers: [(String, String)] = [], body: [UInt8]? = nil, timeout: Duration,
        maxBody: Int = 8 << 20
    ) async throws -> HTTPAnswer {
        let client = current()
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.body = .bytes(ByteBuffer(bytes: body))
            request.headers.replaceOrAdd(name: "content-length", value: String(body.count))
        }
        let amount = TimeAmount.milliseconds(max(1, Int64(timeout.seconds * 1000)))
        do {
            let response = try await client.execute(request, timeout: amount)
            var buffer = try await response.body.collect(upTo: maxBody)
            let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
            return HTTPAnswer(status: Int(response.status.code), headers: response.headers, body: bytes)
        } catch let error as CancellationError {
            throw error
        } catch let error as HTTPClientError where error == .cancelled {
            throw CancellationError()
        } catch {
            throw TransportError(url: HTTPTransport.redactQuery(url), underlying: String(describing: error))
        }
    }

    func shutdown() async {
        guard let client else { return }
        self.client = nil
        try? await client.shutdown()
    }

    /// The URL without its query (which may hold a key) for messages.
    static func redactQuery(_ url: String) -> String {
        guard let q = url.firstIndex(of: "?") else { return url }
        return String(url[..<q])
    }
}
