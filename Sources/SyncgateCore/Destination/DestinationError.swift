/// An error a plugin throws with its class already decided and a message fit for the ledger and `status`.
/// The message must never hold a secret (the core redacts known secrets anyway).
public struct DestinationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var failureClass: FailureClass
    /// A short machine-readable code ("SlowDown", "CORRUPTED_DATA", "http-403"), when the protocol has one.
    public var code: String?
    public var message: String

    public init(_ failureClass: FailureClass, code: String? = nil, _ message: String) {
        self.failureClass = failureClass
        self.code = code
        self.message = message
    }

    public static func retryable(_ message: String, code: String? = nil, after: Duration? = nil) -> DestinationError {
        DestinationError(.retryable(after: after), code: code, message)
    }

    public static func permanent(_ message: String, code: String? = nil) -> DestinationError {
        DestinationError(.permanent, code: code, message)
    }

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
