import AsyncHTTPClient
import Foundation
import NIOCore

/// Reads `/api/events` as a browser's EventSource would: the response's bytes as they come, cut into messages at
/// blank lines.
struct EventStreamClient {
    let status: Int
    let contentType: String?
    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private var buffer = ""

    init(url: String, headers: [(String, String)] = []) async throws {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "text/event-stream")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        // A bound on the whole stream, so that a test that went wrong cannot wait for ever.
        let response = try await HTTPCall.client.execute(request, deadline: .now() + .minutes(5))
        status = Int(response.status.code)
        contentType = response.headers.first(name: "content-type")
        iterator = response.body.makeAsyncIterator()
    }

    /// The next message (its lines, without the blank line that ends it); nil when the stream ended.
    mutating func next() async throws -> String? {
        while true {
            if let end = buffer.range(of: "\n\n") {
                let message = String(buffer[..<end.lowerBound])
                buffer.removeSubrange(..<end.upperBound)
                return message
            }
            guard let chunk = try await iterator.next() else { return nil }
            buffer += String(buffer: chunk)
        }
    }

    /// The JSON of a message's `data:` line, nil for a comment or another field.
    static func data(of message: String) -> String? {
        let lines = message.split(separator: "\n").filter { $0.hasPrefix("data: ") }
        return lines.isEmpty ? nil : lines.map { String($0.dropFirst(6)) }.joined(separator: "\n")
    }
}
