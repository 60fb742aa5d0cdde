import Foundation
import SyncgateCore
import Testing
@testable import SyncgateS3

@Suite("S3 error answers and their classification")
struct S3ErrorResponseTests {
    func parse(_ status: Int, _ xml: String, retryAfter: Duration? = nil) -> S3ErrorResponse {
        S3ErrorResponse(status: status, body: Data(xml.utf8), retryAfter: retryAfter)
    }

    @Test func readsCodeMessageAndRequestID() {
        let error = parse(403, """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match &amp; fails</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>
            """)
        #expect(error.code == "SignatureDoesNotMatch")
        #expect(error.message == "The request signature we calculated does not match & fails")
        #expect(error.classification == Classification(.permanent, scope: .destination))
        let destinationError = error.destinationError("PutObject s3://b/k")
        #expect(destinationError.code == "SignatureDoesNotMatch")
        #expect(destinationError.message.contains("HTTP 403 SignatureDoesNotMatch: The request signature"))
        #expect(destinationError.message.contains("4442587FB7D0A2F9"))
    }

    @Test func throttlingAnswersThrottleTheDestinationWithTheirRetryAfter() {
        for (status, code) in [(503, "SlowDown"), (503, "ServiceUnavailable"), (400, "Throttling"), (400, "ThrottlingException"),
                               (429, "TooManyRequestsException"), (503, "RequestLimitExceeded")] {
            let error = parse(status, "<Error><Code>\(code)</Code><Message>Reduce</Message></Error>", retryAfter: .seconds(7))
            #expect(error.classification == Classification(.deferred(after: .seconds(7)), scope: .destination), "\(code)")
            #expect(error.destinationError("x").code == code)
        }
        // S3's 503 means "reduce your rate", with or without a body; so does 429.
        #expect(parse(503, "").classification == Classification(.deferred(), scope: .destination))
        #expect(parse(429, "", retryAfter: .seconds(2)).classification == Classification(.deferred(after: .seconds(2)), scope: .destination))
    }

    @Test func credentialAndConfigurationAnswersBlockTheDestination() {
        for (status, code) in [(403, "InvalidAccessKeyId"), (403, "SignatureDoesNotMatch"), (400, "ExpiredToken"), (400, "InvalidToken"),
                               (400, "TokenRefreshRequired"), (404, "NoSuchBucket"), (400, "AuthorizationHeaderMalformed"),
                               (301, "PermanentRedirect"), (403, "AccountProblem"), (403, "AllAccessDisabled")] {
            let error = parse(status, "<Error><Code>\(code)</Code><Message>m</Message></Error>")
            #expect(error.classification == Classification(.permanent, scope: .destination), "\(code)")
            #expect(error.destinationError("x").scope == .destination)
        }
        // A body-less 301 (HEAD) is a wrong region or endpoint too; so is a 400 naming another region.
        #expect(parse(301, "").classification == Classification(.permanent, scope: .destination))
        let wrongRegion = S3ErrorResponse(status: 400, body: Data(), bucketRegion: "eu-west-1", configuredRegion: "us-east-1")
        #expect(wrongRegion.classification == Classification(.permanent, scope: .destination))
        #expect(wrongRegion.destinationError("HeadObject s3://b/k").message.contains("the bucket is in region eu-west-1"))
        let sameRegion = S3ErrorResponse(status: 400, body: Data(), bucketRegion: "us-east-1", configuredRegion: "us-east-1")
        #expect(sameRegion.classification == Classification(.permanent))
        // The region in an AuthorizationHeaderMalformed body is named in the message.
        let malformed = S3ErrorResponse(
            status: 400, body: Data("<Error><Code>AuthorizationHeaderMalformed</Code><Message>the region 'us-east-1' is wrong; expecting 'eu-central-1'</Message><Region>eu-central-1</Region></Error>".utf8),
            configuredRegion: "us-east-1")
        #expect(malformed.destinationError("PutObject s3://b/k").message.contains("(the bucket is in region eu-central-1)"))
    }

    @Test func clockSkewAndProxiesMakeTheDestinationUnavailable() {
        let skew = parse(403, "<Error><Code>RequestTimeTooSkewed</Code><Message>The difference between the request time and the current time is too large.</Message></Error>")
        #expect(skew.classification == Classification(.retryable(), scope: .destination))
        #expect(skew.destinationError("PutObject s3://b/k").message.contains("this machine's clock is off"))
        #expect(parse(307, "<Error><Code>TemporaryRedirect</Code></Error>").classification.scope == .destination)
        #expect(parse(407, "").classification == Classification(.retryable(), scope: .destination))
    }

    @Test func fileRetryableAnswers() {
        for (status, code) in [(500, "InternalError"), (400, "RequestTimeout"), (400, "BadDigest"), (409, "OperationAborted"),
                               (400, "XAmzContentSHA256Mismatch"), (400, "IncompleteBody")] {
            #expect(parse(status, "<Error><Code>\(code)</Code></Error>", retryAfter: .seconds(1)).classification
                    == Classification(.retryable(after: .seconds(1))), "\(code)")
        }
        for status in [500, 502, 504, 408] {
            #expect(parse(status, "<html>bad gateway</html>").classification == Classification(.retryable()), "\(status)")
        }
        #expect(parse(502, "<html>bad gateway</html>").effectiveCode == "http-502")
    }

    @Test func filePermanentAnswers() {
        for (status, code) in [(400, "InvalidArgument"), (403, "AccessDenied"), (400, "EntityTooLarge"), (400, "KeyTooLongError"),
                               (400, "InvalidStorageClass"), (412, "PreconditionFailed")] {
            let error = parse(status, "<Error><Code>\(code)</Code><Message>m</Message></Error>")
            #expect(error.classification == Classification(.permanent), "\(code)")
            #expect(error.destinationError("x").code == code)
        }
        // A HEAD answer has no body: the status makes the code.
        #expect(parse(403, "").destinationError("HeadObject").code == "http-403")
        #expect(parse(403, "").classification == Classification(.permanent))
    }

    @Test func secretsAreScrubbedFromMessages() {
        let secret = Secret("SuperSecretValue/123+abc")
        let error = parse(403, "<Error><Code>X</Code><Message>echo \(secret.reveal())</Message></Error>").destinationError("ctx")
        #expect(!error.message.contains(secret.reveal()))
        #expect(error.message.contains("<redacted>"))
    }
}
