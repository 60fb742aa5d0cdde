import NIOCore

/// The time and size limits of one HTTP connection (docs/http.md, "Limits"), applied by ``ConnectionGuard``.
struct ConnectionLimits: Sendable {
    /// From the connection's start to its first request's complete head.
    var header: TimeAmount = .seconds(10)
    /// From a request's head to the end of its body.
    var body: TimeAmount = .seconds(10)
    /// From an answer's end to the next request's complete head (a kept-alive connection).
    var idle: TimeAmount = .seconds(60)
    /// The bytes of one request's body read at most, whether a route reads it or not (the routes themselves read
    /// far less: ``FileSelection/maxBody``); beyond that the connection is closed.
    var bodyBytes: Int = 1 << 20

    static let standard = ConnectionLimits()
}
