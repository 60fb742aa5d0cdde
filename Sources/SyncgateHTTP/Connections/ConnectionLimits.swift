import NIOCore

/// The time and size limits of one HTTP connection (docs/http.md, "Limits"), applied by ``ConnectionGuard`` (and
/// its send buffer by ``ConnectionDoor``).
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
    /// While bytes wait to be written, the longest the client may take none of them (its socket buffers full: it
    /// does not read); then the connection is reset.
    var writeStall: TimeAmount = .seconds(30)
    /// The socket's send buffer (`SO_SNDBUF`; Linux doubles it and then leaves it alone): what a client that does
    /// not read holds of the kernel's memory (by default the kernel grows it up to 4 MiB per connection), and how
    /// soon such a client is seen to fall behind. 128 KiB in flight still fills a 10 Mbit/s path 100 ms away.
    var sendBuffer: Int = 64 << 10

    static let standard = ConnectionLimits()
}
