/// Why a file was not delivered: the last error's text (secrets redacted), its class and code, and the attempts.
public struct DeliveryFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var failureClass: FailureClass
    public var code: String?
    /// Attempts made in this run.
    public var attempts: Int

    public init(message: String, failureClass: FailureClass, code: String? = nil, attempts: Int) {
        self.message = message
        self.failureClass = failureClass
        self.code = code
        self.attempts = attempts
    }

    /// The transfer was not started or was stopped because the batch was cancelled.
    public static func cancelled(attempts: Int) -> DeliveryFailure {
        DeliveryFailure(message: "cancelled", failureClass: .retryable(), code: "cancelled", attempts: attempts)
    }

    public var isCancellation: Bool { code == "cancelled" }

    public var description: String { message }
}
