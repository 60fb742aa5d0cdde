import AsyncHTTPClient
import Foundation
import NIOCore
import SyncgateCore

/// Thrown when no HTTP answer came back. Its ``phase`` says whether a request can have reached the server:
/// - ``Phase/connect``: no connection could be made (refused, DNS, TLS handshake, connect timeout, a proxy's
///   refusal). Nothing was sent; the host cannot be reached now.
/// - ``Phase/exchange``: the connection was lost or the answer did not come in time. For a write, whether the
///   server applied it is unknown.
struct TransportError: Error, Sendable, CustomStringConvertible {
    enum Phase: Sendable { case connect, exchange }

    var url: String
    var underlying: String
    var phase: Phase

    var description: String {
        switch phase {
        case .connect: "cannot connect to \(url): \(underlying)"
        case .exchange: "no answer from \(url): \(underlying)"
        }
    }

    /// The error as the plugin reports it: the destination unavailable when nothing could be sent, the file's
    /// retryable failure otherwise. `context` names the operation.
    func destinationError(_ context: String) -> DestinationError {
        switch phase {
        case .connect: .unavailable("\(context): \(self)", code: "unreachable")
        case .exchange: .retryable("\(context): \(self)", code: "connection")
        }
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
