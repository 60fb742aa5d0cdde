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

    @Test func slowDownWithRetryAfterIsRetryableThenSucceeds() async throws {
        let server = try S3TestServer(buckets: ["slow"])
        defer { server.stop() }
        let proxy = try FaultProxy.start(targetPort: server.port)
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
            #expect(error.failureClass == .retryable(after: .seconds(3)))
            #expect(error.message.contains("HTTP 503 SlowDown: Please reduce your request rate."))
        }
        try proxy.pass()
        let receipt = try await destination.upload(item, progress: { _ in })
        #expect(receipt.etag == S3TestFiles.md5(Data("after the slow down".utf8)))
        await destination.finish()
    }

    @Test func connectionResetMidMultipartIsRetryableAndAborted() async throws {
        let server = try S3TestServer(buckets: ["reset"])
        defer { server.stop() }
        let proxy = try FaultProxy.start(targetPort: server.port)
        defer { proxy.stop() }
        let files = try TemporaryDirectory("s3-reset")
        defer { files.remove() }
        let content = S3TestFiles.bytes(12 << 20, seed: 21)
        try files.write("big.bin", content)
        let item = try S3TestFiles.item(files, "big.bin")
        let destination = Self.destination(
            server, proxy: proxy, bucket: "reset",
            multipart: S3MultipartConfig(threshold: 5 << 20, partSize: 5 << 20, concurrency: 1))
        // Every connection is reset once 3 MiB of request bytes went through it: no 5 MiB part can get through,
        // the small requests (CreateMultipartUpload, AbortMultipartUpload) do.
        try proxy.set(["mode": "reset", "after": 3 << 20])
        do {
            _ = try await destination.upload(item, progress: { _ in })
            Issue.record("the upload survived a reset")
        } catch {
            #expect(destination.classify(error).isRetryable, "\(error)")
        }
        #expect(server.requests("DELETE").contains { $0.contains("uploadId=") }, "AbortMultipartUpload sent")
        #expect(try server.openMultipartUploads(bucket: "reset") == 0, "no orphan parts")

        try proxy.pass()
        _ = try await destination.upload(item, progress: { _ in })
        await destination.finish()
        let readBack = try TemporaryDirectory("s3-reset-readback")
        defer { readBack.remove() }
        #expect(try server.objects(bucket: "reset", into: readBack.url)["big.bin"]?.data == content)
    }
}
