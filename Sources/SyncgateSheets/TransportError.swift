import AsyncHTTPClient
import Foundation
import NIOCore
import SyncgateCore
import SyncgateNetwork

/// Thrown when no HTTP answer came back. Its ``phase`` says whether a request can have reached the server:
/// - ``Phase/connect``: no connection could be made (refused, DNS, TLS handshake, connect timeout, a proxy's
///   refusal). Nothing was sent; the host cannot be reached now.
/// - ``Phase/exchange``: the connection was lost or the answer did not come in time. For a write, whether the
///   server applied it is unknown.
///
/// A TLS handshake that fails (the server's certificate is not trusted, say) is a ``Phase/connect`` failure: the
/// destination is unavailable, with a message naming the certificate problem. A proxy that refuses its credentials
/// (407) blocks the destination until its settings change.
struct TransportError: Error, Sendable, CustomStringConvertible {
    enum Phase: Sendable { case connect, exchange }
    /// What failed, where it matters for the classification.
    enum Kind: Sendable { case other, proxyAuthentication }

    var url: String
    var underlying: String
    var phase: Phase
    var kind: Kind = .other
    /// The proxy the request went through, named in the message.
    var proxy: HTTPProxy? = nil

    var description: String {
        let target = proxy.map { "\(url) through the proxy \($0)" } ?? url
        switch phase {
        case .connect: return "cannot connect to \(target): \(underlying)"
        case .exchange: return "no answer from \(target): \(underlying)"
        }
    }

    /// The error as the plugin reports it: the destination unavailable when nothing could be sent (blocked when the
    /// proxy refused its credentials), the file's retryable failure otherwise. `context` names the operation.
    func destinationError(_ context: String) -> DestinationError {
        if kind == .proxyAuthentication {
            return .blocked(
                "\(context): \(self) (407 Proxy Authentication Required: check the proxy's user and password)", code: "proxy-auth")
        }
        switch phase {
        case .connect: return .unavailable("\(context): \(self)", code: "unreachable")
        case .exchange: return .retryable("\(context): \(self)", code: "connection")
        }
    }

    static func kind(of error: any Error) -> Kind {
        (error as? HTTPClientError) == .proxyAuthenticationRequired ? .proxyAuthentication : .other
    }

    /// Which phase an error of AsyncHTTPClient or NIO belongs to. Connection establishment is never retried by the
    /// client (see ``HTTPTransport``), so a connect failure surfaces as the connection's own error.
    static func phase(of error: any Error) -> Phase {
        if let error = error as? HTTPClientError {
            let connecting: [HTTPClientError] = [
                .connectTimeout, .tlsHandshakeTimeout, .socksHandshakeTimeout, .httpProxyHandshakeTimeout,
                .proxyAuthenticationRequired, .invalidProxyResponse, .getConnectionFromPoolTimeout,
            ]
            return connecting.contains(error) ? .connect : .exchange
        }
        if let error = error as? ChannelError {
            if case .connectTimeout = error { return .connect }
            return .exchange
        }
        if let error = error as? IOError {
            switch error.errnoCode {
            case ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, ENETDOWN, EHOSTDOWN, EADDRNOTAVAIL: return .connect
            default: return .exchange
            }
        }
        // Types of libraries this module does not import (NIOPosix's connection errors, NIOSSL's), by name.
        let type = String(reflecting: Swift.type(of: error))
        if type.contains("NIOConnectionError") || type.contains("SocketAddressError") || type.contains("DNS") { return .connect }
        if type.contains("NIOSSL") || type.contains("BoringSSL") {
            let text = String(describing: error)
            return text.contains("uncleanShutdown") || text.contains("readInInvalidTLSState") ? .exchange : .connect
        }
        return .exchange
    }
}
