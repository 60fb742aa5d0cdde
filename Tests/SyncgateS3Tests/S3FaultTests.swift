import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing
@testable import SyncgateS3

/// Failures over the wire, through the fault proxy in front of moto (signature checking on): a 503 SlowDown with
/// Retry-After and a connection reset in the middle of a multipart upload.
@Suite("S3Destination through the fault proxy", .enabled(if: S3TestGate.motoEnabled, S3TestGate.motoComment))
struct S3FaultTests {
    static func destination(_ server: S3TestServer, proxy: FaultProxy, bucket: String, multipart: S3MultipartConfig = S3MultipartConfig()) -> S3Destination {
        S3Destination(settings: S3Settings(
            endpoint: URL(string: "http://127.0.0.1:\(proxy.port)")!, region: "us-east-1", bucket: bucket, pathStyle: true,
            credentials: SigV4Credentials(accessKeyID: server.accessKeyID, secretAccessKey: server.secretAccessKey),
            multipart: multipart))
    }

    @Test func slowDownWithRetryAfterThrottlesThenSucceeds() async throws {
        let server = try await S3TestServer(buckets: ["slow"])
        defer { server.stop() }
        let proxy = try await FaultProxy.start(targetPort: server.port)
        defer { proxy.stop() }
        let files = try TemporaryDirectory("s3-slow")
        defer { files.remove() }
        try files.write("a.txt", "after the slow down")
        let item = try S3TestFiles.item(files, "a.txt")
        let destination = Self.destination(server, proxy: proxy, bucket: "slow")
        try proxy.set([
            "mode": "http_error", "status": 503, "retry_after": 3, "count": 1, "content_type": "application/xml",
            "body": "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>R1</RequestId></Error>",
        ])
        do {
            _ = try await destination.upload(item, progress: { _ in })
            Issue.record("the upload went through a 503")
        } catch let error as DestinationError {
            #expect(error.code == "SlowDown")
            #expect(error.classification == Classification(.deferred(after: .seconds(3)), scope: .destination), "throttled")
            #expect(error.message.contains("HTTP 503 SlowDown: Please reduce your request rate."))
        }
        try proxy.pass()
        let receipt = try await destination.upload(item, progress: { _ in })
        #expect(receipt.etag == S3TestFiles.md5(Data("after the slow down".utf8)))
        await destination.finish()
    }

    @Test func connectionResetMidMultipartIsRetryableKeptThenAbortedByFinish() async throws {
        let server = try await S3TestServer(buckets: ["reset"])
        defer { server.stop() }
        let proxy = try await FaultProxy.start(targetPort: server.port)
        defer { proxy.stop() }
        let files = try TemporaryDirectory("s3-reset")
        defer { files.remove() }
        let content = S3TestFiles.bytes(12 << 20, seed: 21)
        try files.write("big.bin", content)
        let item = try S3TestFiles.item(files, "big.bin")
        let multipart = S3MultipartConfig(threshold: 5 << 20, partSize: 5 << 20, concurrency: 1)
        let destination = Self.destination(server, proxy: proxy, bucket: "reset", multipart: multipart)
        // Every connection is reset once 3 MiB of request bytes went through it: no 5 MiB part can get through,
        // the small requests (CreateMultipartUpload, AbortMultipartUpload) do.
        try proxy.set(["mode": "reset", "after": 3 << 20])
        do {
            _ = try await destination.upload(item, progress: { _ in })
            Issue.record("the upload survived a reset")
        } catch {
            #expect(destination.classify(error).failureClass.isRetryable, "\(error)")
        }
        #expect(try await server.openMultipartUploads(bucket: "reset") == 1, "kept for the next attempt")
        // No next attempt: finishing the destination aborts it.
        await destination.finish()
        #expect(server.requests("DELETE").contains { $0.contains("uploadId=") }, "AbortMultipartUpload sent")
        #expect(try await server.openMultipartUploads(bucket: "reset") == 0, "no orphan parts")

        try proxy.pass()
        let again = Self.destination(server, proxy: proxy, bucket: "reset", multipart: multipart)
        _ = try await again.upload(item, progress: { _ in })
        await again.finish()
        let readBack = try TemporaryDirectory("s3-reset-readback")
        defer { readBack.remove() }
        #expect(try await server.objects(bucket: "reset", into: readBack.url)["big.bin"]?.data == content)
    }

    /// A retryable failure in the middle of a multipart upload: the next attempt sends only the missing parts.
    @Test func nextAttemptResumesTheMultipartUpload() async throws {
        let server = try await S3TestServer(buckets: ["resume"])
        defer { server.stop() }
        let proxy = try await FaultProxy.start(targetPort: server.port)
        defer { proxy.stop() }
        let files = try TemporaryDirectory("s3-resume")
        defer { files.remove() }
        let content = S3TestFiles.bytes(12 << 20, seed: 33)  // parts of 5, 5 and 2 MiB
        try files.write("big.bin", content)
        let item = try S3TestFiles.item(files, "big.bin")
        let destination = Self.destination(
            server, proxy: proxy, bucket: "resume",
            multipart: S3MultipartConfig(threshold: 5 << 20, partSize: 5 << 20, concurrency: 1))
        // moto answers HTTP/1.0 (one request per connection): once part 2's last byte is handed over, the next
        // connection (part 3's) is set to be reset 1 MiB in.
        let seen = S3ProgressLog()
        let armed = S3ProgressLog()
        do {
            _ = try await destination.upload(item, progress: { bytes in
                seen.add(bytes)
                if bytes >= 10 << 20, armed.last == nil {
                    armed.add(1)
                    try? proxy.set(["mode": "reset", "after": 1 << 20, "count": 1])
                }
            })
            Issue.record("the upload survived a reset")
        } catch {
            #expect(destination.classify(error).failureClass.isRetryable, "\(error)")
        }
        let okParts = { (number: Int) in
            server.requests("PUT").filter { $0.contains("partNumber=\(number)&") && $0.contains("\" 200") }.count
        }
        try #require(okParts(1) == 1 && okParts(2) == 1, "parts 1 and 2 arrived before the reset: \(server.requests("PUT"))")
        #expect(okParts(3) == 0)

        try proxy.pass()
        let resumed = S3ProgressLog()
        let receipt = try await destination.upload(item, progress: { resumed.add($0) })
        #expect(receipt.etag?.hasSuffix("-3") == true)
        #expect(okParts(1) == 1 && okParts(2) == 1, "parts 1 and 2 were not sent again")
        #expect(okParts(3) == 1)
        #expect(server.requests("POST").filter { $0.contains("?uploads") }.count == 1, "one CreateMultipartUpload")
        #expect((resumed.last ?? 0) == 12 << 20)
        await destination.finish()
        #expect(try await server.openMultipartUploads(bucket: "resume") == 0)
        let readBack = try TemporaryDirectory("s3-resume-readback")
        defer { readBack.remove() }
        #expect(try await server.objects(bucket: "resume", into: readBack.url)["big.bin"]?.data == content)
    }
}
