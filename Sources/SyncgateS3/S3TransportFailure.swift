#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import AsyncHTTPClient
import Foundation
import NIOCore
import SyncgateCore

/// A failure before or instead of an HTTP answer (no connection, TLS, a reset, a timeout), classified and worded
/// for the ledger:
///
/// | failure | class, scope | code |
/// |---|---|---|
/// | connection refused, host unreachable, DNS, connect timeout, proxy | retryable, destination (unavailable) | `connection` |
/// | TLS handshake or certificate | retryable, destination (unavailable) | `tls` |
/// | reset, closed or cut mid-request, unreadable answer | retryable, file | `connection` |
/// | no answer, or a stalled transfer, within `request_timeout` | retryable, file | `timeout` |
///
/// AsyncHTTPClient reports NIO's, NIOSSL's and its own errors; NIOSSL and NIOPosix are not dependencies of this
/// module, so their errors are recognised by type name.
enum S3TransportFailure {
    /// `idleLimit` is the request timeout, which AsyncHTTPClient's read and write timeouts also are.
    static func error(_ error: any Error, context: String, origin: String, idleLimit: Duration) -> DestinationError {
        let (classification, code, detail) = classify(error, idleLimit: idleLimit)
        return DestinationError(classification, code: code, Redactor.shared.redact("\(context): \(detail(origin))"))
    }

    private static let unavailable = Classification(.retryable(), scope: .destination)
    private static let fileRetryable = Classification(.retryable())

    private static func classify(_ error: any Error, idleLimit: Duration) -> (Classification, String, (String) -> String) {
        if let timeout = error as? S3RequestTimeout {
            return (fileRetryable, "timeout", { "no answer from \($0) within \(timeout.limit.syncgateText)" })
        }
        let typeName = String(reflecting: type(of: error))
        let text = String(describing: error)
        let short = Redactor.shared.snippet(text)  // redacted before it is cut
        if typeName.contains("NIOSSL") || typeName.contains("BoringSSL") {
            return (unavailable, "tls", { "cannot reach \($0): TLS handshake failed: \(short)" })
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
            case .socksHandshakeTimeout, .httpProxyHandshakeTimeout, .invalidProxyResponse, .proxyAuthenticationRequired:
                return (unavailable, "connection", { "cannot reach \($0) through the proxy: \(short)" })
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
