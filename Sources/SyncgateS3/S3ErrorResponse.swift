import Foundation
import SyncgateCore

/// An S3 error: the HTTP status, the S3 error code and message from the `<Error>` body (when the response had
/// one), and how it is classified (class and scope, see ``classification``). Turned into a ``DestinationError``
/// whose code is the S3 code.
public struct S3ErrorResponse: Sendable, Hashable {
    public var status: Int
    public var code: String?
    public var message: String?
    public var requestID: String?
    /// The server's `Retry-After`, in seconds.
    public var retryAfter: Duration?
    /// The region the bucket is in when the server said so and it is not the configured one (`x-amz-bucket-region`,
    /// or `<Region>` in the body of a PermanentRedirect / AuthorizationHeaderMalformed answer).
    public var bucketRegion: String?

    public init(
        status: Int, code: String? = nil, message: String? = nil, requestID: String? = nil, retryAfter: Duration? = nil,
        bucketRegion: String? = nil
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.requestID = requestID
        self.retryAfter = retryAfter
        self.bucketRegion = bucketRegion
    }

    /// Reads an `<Error><Code/><Message/><RequestId/></Error>` body; any other body leaves code and message unset.
    /// `configuredRegion` drops a region that is the configured one (the mismatch is what matters).
    public init(status: Int, body: Data, retryAfter: Duration? = nil, bucketRegion: String? = nil, configuredRegion: String? = nil) {
        self.init(status: status, retryAfter: retryAfter, bucketRegion: bucketRegion == configuredRegion ? nil : bucketRegion)
        if let root = S3XMLElement.parse(body), root.name == "Error" {
            code = root.value("Code")
            message = root.value("Message")
            requestID = root.value("RequestId")
            if self.bucketRegion == nil { self.bucketRegion = root.value("Region") }
            if let configuredRegion, self.bucketRegion == configuredRegion { self.bucketRegion = nil }
        }
    }

    /// The server asks for fewer requests: the destination is throttled (paused for Retry-After, fewer uploads at
    /// once). S3 answers 503 SlowDown; other services and S3-compatible servers use the other codes, or 429.
    static let throttlingCodes: Set<String> = [
        "SlowDown", "SlowDownRead", "SlowDownWrite", "ServiceUnavailable", "Throttling", "ThrottlingException",
        "ThrottledException", "RequestThrottled", "RequestThrottledException", "TooManyRequestsException",
        "RequestLimitExceeded", "BandwidthLimitExceeded", "EC2ThrottledException", "ProvisionedThroughputExceededException",
    ]

    /// The destination rejects syncgate's credentials or configuration: it is blocked until they change. A wrong
    /// region or endpoint is PermanentRedirect (301) or AuthorizationHeaderMalformed (400).
    static let blockingCodes: Set<String> = [
        "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "TokenRefreshRequired",
        "InvalidClientTokenId", "UnrecognizedClientException", "InvalidSecurity", "IncompleteSignature",
        "MissingSecurityHeader", "AuthFailure", "AccountProblem", "AllAccessDisabled", "NotSignedUp",
        "CredentialsNotSupported", "NoSuchBucket", "InvalidBucketName", "AuthorizationHeaderMalformed",
        "PermanentRedirect", "IllegalLocationConstraintException",
    ]

    /// The destination cannot be used now but may be soon: the clocks disagree (a request dated more than 15
    /// minutes off), or a bucket's name is still being propagated (307).
    static let unavailableCodes: Set<String> = ["RequestTimeTooSkewed", "TemporaryRedirect"]

    /// This file's attempt failed and another may succeed, whatever the status.
    static let retryableCodes: Set<String> = [
        "RequestTimeout", "InternalError", "BadDigest", "OperationAborted", "PriorRequestNotComplete",
        "IDPCommunicationError", "XAmzContentSHA256Mismatch", "IncompleteBody",
    ]

    /// What the delivery layer does with this answer:
    ///
    /// | answer | class, scope |
    /// |---|---|
    /// | 429, 503, `SlowDown` and the throttling codes | deferred, destination (throttled; Retry-After honoured) |
    /// | credentials, token, missing bucket, wrong region (`301`, `AuthorizationHeaderMalformed`) | permanent, destination (blocked) |
    /// | `RequestTimeTooSkewed`, `TemporaryRedirect`, `407` (a proxy) | retryable, destination (unavailable) |
    /// | other 5xx, `408`, `RequestTimeout`, `InternalError`, `BadDigest`, ... | retryable, file |
    /// | any other 4xx (`AccessDenied`, `KeyTooLongError`, `EntityTooLarge`, ...) | permanent, file |
    public var classification: Classification {
        if let code {
            if S3ErrorResponse.throttlingCodes.contains(code) { return Classification(.deferred(after: retryAfter), scope: .destination) }
            if S3ErrorResponse.blockingCodes.contains(code) { return Classification(.permanent, scope: .destination) }
            if S3ErrorResponse.unavailableCodes.contains(code) { return Classification(.retryable(after: retryAfter), scope: .destination) }
            if S3ErrorResponse.retryableCodes.contains(code) { return Classification(.retryable(after: retryAfter)) }
        }
        switch status {
        case 429, 503: return Classification(.deferred(after: retryAfter), scope: .destination)
        case 301: return Classification(.permanent, scope: .destination)
        case 307, 407: return Classification(.retryable(after: retryAfter), scope: .destination)
        case 400 where code == nil && bucketRegion != nil:
            // A body-less answer (HEAD) naming the bucket's region: signed for the wrong one.
            return Classification(.permanent, scope: .destination)
        case 408, 500...: return Classification(.retryable(after: retryAfter))
        default: return Classification(.permanent)
        }
    }

    /// The class alone (see ``classification``).
    public var failureClass: FailureClass { classification.failureClass }

    /// The code recorded in the ledger: the S3 code, or `http-<status>` for a body-less answer (HEAD).
    public var effectiveCode: String { code ?? "http-\(status)" }

    public func destinationError(_ context: String) -> DestinationError {
        var text = "\(context): HTTP \(status)"
        if let code { text += " \(code)" }
        if let message, !message.isEmpty { text += ": \(message)" }
        if let bucketRegion, classification.scope == .destination { text += " (the bucket is in region \(bucketRegion))" }
        if code == "RequestTimeTooSkewed" { text += " (this machine's clock is off; syncgate tries again once it is set right)" }
        if let requestID, !requestID.isEmpty { text += " (request id \(requestID))" }
        return DestinationError(classification, code: effectiveCode, Redactor.shared.redact(text))
    }
}
