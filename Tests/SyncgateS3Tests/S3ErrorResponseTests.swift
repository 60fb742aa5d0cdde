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
        #expect(error.failureClass == .permanent)
        let destinationError = error.destinationError("PutObject s3://b/k")
        #expect(destinationError.code == "SignatureDoesNotMatch")
        #expect(destinationError.message.contains("HTTP 403 SignatureDoesNotMatch: The request signature"))
        #expect(destinationError.message.contains("4442587FB7D0A2F9"))
    }

    @Test func retryableAnswers() {
        #expect(parse(503, "<Error><Code>SlowDown</Code><Message>Reduce</Message></Error>", retryAfter: .seconds(7)).failureClass == .retryable(after: .seconds(7)))
        #expect(parse(500, "<Error><Code>InternalError</Code></Error>").failureClass.isRetryable)
        #expect(parse(400, "<Error><Code>RequestTimeout</Code></Error>").failureClass.isRetryable)
        #expect(parse(429, "").failureClass.isRetryable)
        #expect(parse(502, "<html>bad gateway</html>").failureClass.isRetryable)
        #expect(parse(502, "<html>bad gateway</html>").effectiveCode == "http-502")
    }

    @Test func permanentAnswers() {
        for (status, code) in [(403, "InvalidAccessKeyId"), (404, "NoSuchBucket"), (400, "InvalidArgument"), (400, "BadDigest"), (403, "AccessDenied"), (400, "EntityTooLarge")] {
            let error = parse(status, "<Error><Code>\(code)</Code><Message>m</Message></Error>")
            #expect(error.failureClass == .permanent, "\(code)")
            #expect(error.destinationError("x").code == code)
        }
        // A HEAD answer has no body: the status makes the code.
        #expect(parse(403, "").destinationError("HeadObject").code == "http-403")
        #expect(parse(403, "").failureClass == .permanent)
    }

    @Test func secretsAreScrubbedFromMessages() {
        let secret = Secret("SuperSecretValue/123+abc")
        let error = parse(403, "<Error><Code>X</Code><Message>echo \(secret.reveal())</Message></Error>").destinationError("ctx")
        #expect(!error.message.contains(secret.reveal()))
        #expect(error.message.contains("<redacted>"))
    }
}
