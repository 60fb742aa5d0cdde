import Foundation

/// How the delivery layer treats an error: decided by the plugin, acted on by the core.
public enum FailureClass: Sendable, Hashable {
    /// Worth another attempt (timeouts, connection loss, 5xx, 429, "busy"). `after` is a server's
    /// Retry-After, honoured as the least delay before the next attempt.
    case retryable(after: Duration? = nil)
    /// Will fail again the same way (auth, not found, invalid data): not retried.
    case permanent
    /// Not a failure of the file: the destination asks to wait (e.g. a head unit at HMI level NONE).
    /// The attempt is not counted against the retry budget; the wait is bounded by the attempt timeout.
    case deferred(after: Duration? = nil)

    public var isRetryable: Bool {
        if case .permanent = self { return false }
        return true
    }

    public var name: String {
        switch self {
        case .retryable: "retryable"
        case .permanent: "permanent"
        case .deferred: "deferred"
        }
    }

    /// The classification shared by all destinations for errors they do not recognise themselves.
    public static func classify(_ error: any Error) -> FailureClass {
        if let error = error as? DestinationError { return error.failureClass }
        if error is CancellationError { return .retryable() }
        if error is AttemptTimeoutError { return .retryable() }
        if error is FileChangedError { return .retryable() }
        if let posix = error as? POSIXError {
            switch posix.code {
            case .ECONNREFUSED, .ECONNRESET, .ECONNABORTED, .ETIMEDOUT, .EPIPE, .ENETUNREACH, .EHOSTUNREACH,
                .ENETDOWN, .EAGAIN, .EINTR, .ENOBUFS:
                return .retryable()
            default:
                return .permanent
            }
        }
        // Errors of networking libraries the core does not link (NIO's IOError, ChannelError, HTTPClientError)
        // are recognised by name so the core stays independent of them.
        let typeName = String(reflecting: type(of: error))
        if typeName.contains("ChannelError") || typeName.contains("IOError") || typeName.contains("HTTPClientError")
            || typeName.contains("NIOConnectionError") || typeName.contains("Timeout")
        {
            return .retryable()
        }
        return .permanent
    }
}
