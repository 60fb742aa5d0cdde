import Foundation
import SyncgateCore

/// An S3 error: the HTTP status, the S3 error code and message from the `<Error>` body (when the response had
/// one), and how it is classified. Turned into a ``DestinationError`` whose code is the S3 code.
public struct S3ErrorResponse: Sendable, Hashable {
    public var status: Int
    public var code: String?
    public var message: String?
    public var requestID: String?
    /// The server's `Retry-After`, in seconds.
    public var retryAfter: Duration?

    public init(status: Int, code: String? = nil, message: String? = nil, requestID: String? = nil, retryAfter: Duration? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.requestID = requestID
        self.retryAfter = retryAfter
    }

    /// Reads an `<Error><Code/><Message/><RequestId/></Error>` body; any other body leaves code and message unset.
    public init(status: Int, body: Data, retryAfter: Duration? = nil) {
        self.init(status: status, retryAfter: retryAfter)
        if let root = S3XMLElement.parse(body), root.name == "Error" {
            code = root.value("Code")
            message = root.value("Message")
            requestID = root.value("RequestId")
        }
    }

    /// Codes worth another attempt whatever their status.
    static let retryableCodes: Set<String> = [
        "SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "Throttling", "ThrottlingException",
        "RequestThrottled", "TooManyRequestsException", "OperationAborted", "RequestLimitExceeded",
        "BandwidthLimitExceeded", "EC2ThrottledException", "PriorRequestNotComplete", "IDPCommunicationError",
    ]

    /// 5xx, 429, 408, and the throttling and timeout codes are retryable (honouring Retry-After); everything
    /// else (403 SignatureDoesNotMatch / InvalidAccessKeyId, 404 NoSuchBucket, other 4xx) is permanent.
    public var failureClass: FailureClass {
        if let code, S3ErrorResponse.retryableCodes.contains(code) { return .retryable(after: retryAfter) }
        if status >= 500 || status == 429 || status == 408 { return .retryable(after: retryAfter) }
        return .permanent
    }

    /// The code recorded in the ledger: the S3 code, or `http-<status>` for a body-less answer (HEAD).
    public var effectiveCode: String { code ?? "http-\(status)" }

    public func destinationError(_ context: String) -> DestinationError {
        var text = "\(context): HTTP \(status)"
        if let code { text += " \(code)" }
        if let message, !message.isEmpty { text += ": \(message)" }
        if let requestID, !requestID.isEmpty { text += " (request id \(requestID))" }
        return DestinationError(failureClass, code: effectiveCode, Redactor.shared.redact(text))
    }
}
