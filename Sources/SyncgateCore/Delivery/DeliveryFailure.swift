/// Why a file was not delivered: the last error's text (secrets redacted), its class and code, and the attempts.
public struct DeliveryFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var failureClass: FailureClass
    /// Whether the failure is the file's or the whole destination's.
    public var scope: FailureScope
    public var code: String?
    /// Attempts made in this run.
    public var attempts: Int
    /// A server's Retry-After too long to wait for within a run: the next run is scheduled no sooner.
    public var retryAfter: Duration?

    public init(message: String, failureClass: FailureClass, scope: FailureScope = .file, code: String? = nil, attempts: Int, retryAfter: Duration? = nil) {
        self.message = message
        self.failureClass = failureClass
        self.scope = scope
        self.code = code
        self.attempts = attempts
        self.retryAfter = retryAfter
    }

    /// The transfer was not started or was stopped because the batch was cancelled.
    public static func cancelled(attempts: Int) -> DeliveryFailure {
        DeliveryFailure(message: "cancelled", failureClass: .retryable(), code: "cancelled", attempts: attempts)
    }

    public var isCancellation: Bool { code == "cancelled" }

    public var description: String { message }
}
