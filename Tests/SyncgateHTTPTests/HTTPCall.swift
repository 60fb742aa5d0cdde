import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Real HTTP requests to a test server over loopback, with AsyncHTTPClient.
struct HTTPCall: Sendable {
    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: String
        var json: Any? { try? JSONSerialization.jsonObject(with: Data(body.utf8)) }
        /// The message of an error answer (`{"error": {"message": ...}}`).
        var errorMessage: String? { ((json as? [String: Any])?["error"] as? [String: Any])?["message"] as? String }
    }

    static let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))

    let base: String

    func get(_ path: String, headers: [(String, String)] = []) async throws -> Answer {
        try await send(path, method: .GET, headers: headers)
    }

    func post(_ path: String, json: String? = nil, headers: [(String, String)] = []) async throws -> Answer {
        var all = headers
        if json != nil, !headers.contains(where: { $0.0.lowercased() == "content-type" }) { all.append(("Content-Type", "application/json")) }
        return try await send(path, method: .POST, headers: all, body: json)
    }

    func send(_ path: String, method: HTTPMethod, headers: [(String, String)] = [], body: String? = nil) async throws -> Answer {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response: HTTPClientResponse
        do {
            response = try await HTTPCall.client.execute(request, timeout: .seconds(30))
        } catch where HTTPCall.isReset(error) {
            // A kept-alive connection the server closed as idle (its idle limit passes while a loaded run holds the
            // test's task) can be reset under a request sent on it before any answer: sent again once on a new
            // connection, as a browser does.
            print("HTTPCall: \(method) \(path): \(error) before any answer; sent again")
            response = try await HTTPCall.client.execute(request, timeout: .seconds(30))
        }
        let bytes = try await response.body.collect(upTo: 16 << 20)
        return Answer(status: Int(response.status.code), headers: response.headers, body: String(buffer: bytes))
    }

    /// Whether a request failed because its connection was reset or closed before any answer.
    static func isReset(_ error: any Error) -> Bool {
        if let error = error as? HTTPClientError, error == .remoteConnectionClosed { return true }
        if let error = error as? IOError, error.errnoCode == ECONNRESET { return true }
        return false
    }
}
