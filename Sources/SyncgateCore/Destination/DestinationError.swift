/// An error a plugin throws with its class and scope already decided and a message fit for the ledger and
/// `status`. The message must never hold a secret (the core redacts known secrets anyway).
public struct DestinationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var failureClass: FailureClass
    /// Whether the error is about this file or about the destination as a whole (see ``FailureScope``).
    public var scope: FailureScope
    /// A short machine-readable code ("SlowDown", "CORRUPTED_DATA", "http-403"), when the protocol has one.
    public var code: String?
    public var message: String

    public init(_ failureClass: FailureClass, scope: FailureScope = .file, code: String? = nil, _ message: String) {
        self.failureClass = failureClass
        self.scope = scope
        self.code = code
        self.message = message
    }

    public init(_ classification: Classification, code: String? = nil, _ message: String) {
        self.init(classification.failureClass, scope: classification.scope, code: code, message)
    }

    /// This file's attempt failed; another may succeed.
    public static func retryable(_ message: String, code: String? = nil, after: Duration? = nil) -> DestinationError {
        DestinationError(.retryable(after: after), code: code, message)
    }

    /// This file cannot go, however often it is tried.
    public static func permanent(_ message: String, code: String? = nil) -> DestinationError {
        DestinationError(.permanent, code: code, message)
    }

    /// The destination cannot be reached or used now (connection refused, no session, clock skew, no space): it is
    /// unavailable until a later probe answers; its files wait, pending.
    public static func unavailable(_ message: String, code: String? = nil, after: Duration? = nil) -> DestinationError {
        DestinationError(.retryable(after: after), scope: .destination, code: code, message)
    }

    /// The destination refuses syncgate itself (credentials or configuration rejected): it is blocked until its
    /// settings or credentials change, or `syncgate retry`.
    public static func blocked(_ message: String, code: String? = nil) -> DestinationError {
        DestinationError(.permanent, scope: .destination, code: code, message)
    }

    /// The destination asks for fewer requests (429, SlowDown, RESOURCE_EXHAUSTED): its uploads pause for `after`
    /// (or the backoff) and its concurrency drops; no retry is spent.
    public static func throttled(_ message: String, code: String? = nil, after: Duration? = nil) -> DestinationError {
        DestinationError(.deferred(after: after), scope: .destination, code: code, message)
    }

    public var classification: Classification { Classification(failureClass, scope: scope) }

    public var description: String {
        if let code { return "\(code): \(message)" }
        return message
    }
}

/// Thrown by the delivery layer when one attempt exceeds `attempt_timeout`.
public struct AttemptTimeoutError: Error, Sendable, CustomStringConvertible {
    public var timeout: Duration
    public init(timeout: Duration) { self.timeout = timeout }
    public var description: String { "attempt timed out after \(timeout.syncgateText)" }
}
