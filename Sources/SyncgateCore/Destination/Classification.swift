import Foundation

/// What the delivery layer does with an error: its class (retry it, give it up, or wait) and its scope (the file,
/// or the whole destination). Together they say what happens:
///
/// | scope \ class | retryable | permanent | deferred |
/// |---|---|---|---|
/// | file | retried with backoff, then failed and rescheduled | failed, not retried | waited for, no retry spent |
/// | destination | destination unavailable: its files wait | destination blocked until its settings change | destination throttled: paused, concurrency lowered |
public struct Classification: Sendable, Hashable, CustomStringConvertible {
    public var failureClass: FailureClass
    public var scope: FailureScope

    public init(_ failureClass: FailureClass, scope: FailureScope = .file) {
        self.failureClass = failureClass
        self.scope = scope
    }

    public var description: String { "\(failureClass.name) (\(scope.rawValue))" }

    /// The classification shared by all destinations for errors they do not recognise themselves: a
    /// ``DestinationError`` says its own; a connection that cannot be made is the destination's; a connection lost
    /// while in use, a timeout of the attempt and a file changed while sent are the file's, retryable; anything
    /// else is the file's, permanent.
    public static func of(_ error: any Error) -> Classification {
        if let error = error as? DestinationError { return Classification(error.failureClass, scope: error.scope) }
        if error is CancellationError || error is AttemptTimeoutError || error is FileChangedError {
            return Classification(.retryable())
        }
        if let posix = error as? POSIXError {
            switch posix.code {
            case .ECONNREFUSED, .ENETUNREACH, .EHOSTUNREACH, .ENETDOWN, .EHOSTDOWN:
                return Classification(.retryable(), scope: .destination)
            case .ENOSPC, .EDQUOT:
                return Classification(.retryable(), scope: .destination)
            case .EROFS:
                return Classification(.permanent, scope: .destination)
            case .ECONNRESET, .ECONNABORTED, .ETIMEDOUT, .EPIPE, .EAGAIN, .EINTR, .ENOBUFS:
                return Classification(.retryable())
            default:
                return Classification(.permanent)
            }
        }
        // Errors of networking libraries the core does not link (NIO's IOError, ChannelError, HTTPClientError)
        // are recognised by name so the core stays independent of them.
        let typeName = String(reflecting: type(of: error))
        let text = String(describing: error).lowercased()
        if typeName.contains("NIOConnectionError") || text.contains("connecttimeout") || text.contains("connection refused")
            || text.contains("connectionrefused")
        {
            return Classification(.retryable(), scope: .destination)
        }
        if typeName.contains("ChannelError") || typeName.contains("IOError") || typeName.contains("HTTPClientError")
            || typeName.contains("Timeout")
        {
            return Classification(.retryable())
        }
        return Classification(.permanent)
    }
}
