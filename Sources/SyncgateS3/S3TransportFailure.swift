#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import AsyncHTTPClient
import Foundation
import NIOCore
import SyncgateCore
import SyncgateNetwork

/// A failure before or instead of an HTTP answer (no connection, TLS, a reset, a timeout), classified and worded
/// for the ledger:
///
/// | failure | class, scope | code |
/// |---|---|---|
/// | connection refused, host unreachable, DNS, connect timeout, proxy | retryable, destination (unavailable) | `connection` |
/// | the proxy refused its credentials (407) | permanent, destination (blocked) | `proxy-auth` |
/// | TLS handshake or certificate | retryable, destination (unavailable) | `tls` |
/// | reset, closed or cut mid-request, unreadable answer | retryable, file | `connection` |
/// | no answer, or a stalled transfer, within `request_timeout` | retryable, file | `timeout` |
///
/// AsyncHTTPClient reports NIO's, NIOSSL's and its own errors; NIOSSL and NIOPosix are not dependencies of this
/// module, so their errors are recognised by type name.
enum S3TransportFailure {
    /// `idleLimit` is the request timeout, which AsyncHTTPClient's read and write timeouts also are. `proxy` is the
    /// proxy the request went through (named in the message), `trust` the CAs the destination trusts (named when
    /// the server's certificate is not trusted).
    static func error(
        _ error: any Error, context: String, origin: String, idleLimit: Duration, proxy: HTTPProxy? = nil, trust: TLSTrust = .system
    ) -> DestinationError {
        let (classification, code, detail) = classify(error, idleLimit: idleLimit, trust: trust)
        let target = proxy.map { "\(origin) through the proxy \($0)" } ?? origin
        return DestinationError(classification, code: code, Redactor.shared.redact("\(context): \(detail(target))"))
    }

    private static let unavailable = Classification(.retryable(), scope: .destination)
    private static let blocked = Classification(.permanent, scope: .destination)
    private static let fileRetryable = Classification(.retryable())

    private static func classify(_ error: any Error, idleLimit: Duration, trust: TLSTrust) -> (Classification, String, (String) -> String) {
        if let timeout = error as? S3RequestTimeout {
            return (fileRetryable, "timeout", { "no answer from \($0) within \(timeout.limit.syncgateText)" })
        }
        let typeName = String(reflecting: type(of: error))
        let text = String(describing: error)
        let short = Redactor.shared.snippet(text)  // redacted before it is cut
        if typeName.contains("NIOSSL") || typeName.contains("BoringSSL") {
            let why = TLSFailureHint.text(for: error, trust: trust, keys: "ca_file, AWS_CA_BUNDLE or SSL_CERT_FILE") ?? short
            return (unavailable, "tls", { "cannot reach \($0): TLS handshake failed: \(why)" })
        }
        if typeName.contains("NIOConnectionError") {
            // Every address was tried and failed (or none resolved).
            let lower = text.lowercased()
            if lower.contains("connection refused") || lower.contains("errno: 111") {
                return (unavailable, "connection", { "cannot reach \($0): connection refused" })
            }
            if lower.contains("connectionerrors: []") || lower.contains("dns") || lower.contains("resolve") {
                return (unavailable, "connection", { "cannot reach \($0): the host name does not resolve (\(short))" })
            }
            return (unavailable, "connection", { "cannot reach \($0): \(short)" })
        }
        if let client = error as? HTTPClientError {
            switch client {
            case .connectTimeout, .getConnectionFromPoolTimeout:
                return (unavailable, "connection", { "cannot reach \($0): connect timed out" })
            case .tlsHandshakeTimeout:
                return (unavailable, "tls", { "cannot reach \($0): the TLS handshake timed out" })
            case .proxyAuthenticationRequired:
                return (blocked, "proxy-auth", { "cannot reach \($0): the proxy refused its credentials (407 Proxy Authentication Required); check the proxy's user and password" })
            case .socksHandshakeTimeout, .httpProxyHandshakeTimeout:
                return (unavailable, "connection", { "cannot reach \($0): the proxy did not answer in time (\(short))" })
            case .invalidProxyResponse:
                return (unavailable, "connection", { "cannot reach \($0): the proxy could not open a tunnel to it (\(short))" })
            case .readTimeout:
                return (fileRetryable, "timeout", { "no answer from \($0) within \(idleLimit.syncgateText)" })
            case .writeTimeout:
                return (fileRetryable, "timeout", { "\($0) read nothing of the request for \(idleLimit.syncgateText)" })
            case .deadlineExceeded:
                return (fileRetryable, "timeout", { "no answer from \($0) in time" })
            case .remoteConnectionClosed:
                return (fileRetryable, "connection", { "\($0) closed the connection (the server closed the connection)" })
            default:
                return (fileRetryable, "connection", { "the exchange with \($0) failed: \(short)" })
            }
        }
        if let io = error as? IOError {
            return errno(io.errnoCode, short)
        }
        if let posix = error as? POSIXError {
            return errno(posix.code.rawValue, short)
        }
        if let channel = error as? ChannelError {
            switch channel {
            case .connectTimeout:
                return (unavailable, "connection", { "cannot reach \($0): connect timed out" })
            default:
                return (fileRetryable, "connection", { "the connection to \($0) failed: \(short)" })
            }
        }
        // Anything else on the wire (an answer that is not HTTP, a stream error): this attempt failed.
        return (fileRetryable, "connection", { "the exchange with \($0) failed: \(short)" })
    }

    private static func errno(_ code: CInt, _ short: String) -> (Classification, String, (String) -> String) {
        switch code {
        case ECONNREFUSED:
            return (unavailable, "connection", { "cannot reach \($0): connection refused" })
        case ENETUNREACH, EHOSTUNREACH, ENETDOWN, EHOSTDOWN:
            return (unavailable, "connection", { "cannot reach \($0): \(String(cString: strerror(code)))" })
        case ETIMEDOUT:
            return (fileRetryable, "timeout", { "\($0): \(String(cString: strerror(code)))" })
        default:
            return (fileRetryable, "connection", { "\($0) closed the connection (\(String(cString: strerror(code))))" })
        }
    }
}
