import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing
@testable import SyncgateS3

/// Issue 20, the plugin's side: a peer that stores wrong bytes and answers their ETag truthfully, paginates forever,
/// repeats a continuation token, answers a huge body, or stalls. Every run ends, within the bounds, with an error
/// that says what happened; nothing wrong is taken for a copy. (Time bounds here are generous: they catch a hang,
/// not a slow machine.)
@Suite("S3Destination against hostile peers", .enabled(if: S3TestGate.motoEnabled, S3TestGate.motoComment))
struct S3HostilePeerTests {
    static func destination(
        _ endpoint: String, bucket: String = "hostile", requestTimeout: Duration = .seconds(20),
        multipart: S3MultipartConfig = S3MultipartConfig()
    ) -> S3Destination {
        S3Destination(settings: S3Settings(
            endpoint: URL(string: endpoint)!, region: "us-east-1", bucket: bucket, pathStyle: true,
            credentials: SigV4Credentials(accessKeyID: "AKIAHOSTILE000000000", secretAccessKey: "hostile-test-secret"),
            multipart: multipart, storageClass: nil, requestTimeout: requestTimeout))
    }

    static func elapsed(since start: ContinuousClock.Instant) -> Double { (ContinuousClock.now - start).seconds }

    // MARK: A server that stores other bytes

    @Test func corruptingServerIsNeverTakenForACopy() async throws {
        let server = try await S3HostileServer(.corrupt)
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-corrupt")
        defer { files.remove() }
        try files.write("a.txt", "the bytes that must arrive intact")
        var item = try S3TestFiles.item(files, "a.txt")
        let destination = Self.destination(server.endpoint)
        do {
            _ = try await destination.upload(item, progress: { _ in })
            Issue.record("an upload whose ETag is not the file's MD5 succeeded")
        } catch let error as DestinationError {
            #expect(error.code == "BadDigest")
            #expect(error.classification == Classification(.retryable()), "the next attempt may store the right bytes")
        }
        // The server holds the wrong bytes, with the right size and the plugin's own sha256 metadata echoed back:
        // the echo proves nothing, the ETag (the MD5 of what it holds) rules the copy out.
        #expect(server.requests("PUT").count == 1)
        item.outcomeUnknown = true
        #expect(try await destination.existingCopy(of: item) == nil)
        #expect(server.requests("HEAD").count == 1)

        // A multipart upload to it fails at the first part's ETag and is aborted at the end: never completed.
        try files.write("big.bin", S3TestFiles.bytes(11 << 20, seed: 20))
        let big = try S3TestFiles.item(files, "big.bin")
        let multipart = Self.destination(server.endpoint, multipart: S3MultipartConfig(threshold: 5 << 20, partSize: 5 << 20, concurrency: 1))
        do {
            _ = try await multipart.upload(big, progress: { _ in })
            Issue.record("a multipart upload of corrupted parts completed")
        } catch let error as DestinationError {
            #expect(error.code == "BadDigest", "\(error)")
        }
        #expect(!server.requests("POST").contains { $0.contains("uploadId=") }, "never completed")
        await multipart.finish()
        #expect(server.requests("DELETE").contains { $0.contains("uploadId=") }, "aborted")
        await destination.finish()
    }

    /// The server's own checksum decides, against moto: a copy another tool wrote with the right size and metadata
    /// claiming the right SHA-256 but other bytes is not a copy, in one PUT or in parts; the plugin's own multipart
    /// upload is recognised by recomputing its multipart ETag; another part size is sent again.
    @Test func existingCopyTrustsOnlyTheServersChecksum() async throws {
        let server = try await S3TestServer(buckets: ["verify"])
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-verify")
        defer { files.remove() }
        let multipart = S3MultipartConfig(threshold: 5 << 20, partSize: 5 << 20, concurrency: 2)
        let destination = S3Destination(settings: S3Settings(
            endpoint: URL(string: server.endpoint)!, region: "us-east-1", bucket: "verify", pathStyle: true,
            credentials: SigV4Credentials(accessKeyID: server.accessKeyID, secretAccessKey: server.secretAccessKey),
            multipart: multipart))
        defer { Task { await destination.finish() } }

        let small = S3TestFiles.bytes(4096, seed: 1)
        var smallImpostor = small
        smallImpostor[0] ^= 0xFF
        try files.write("small.bin", small)
        try files.write("small-impostor.bin", smallImpostor)
        var smallItem = try S3TestFiles.item(files, "small.bin")
        smallItem.outcomeUnknown = true
        try await server.put(bucket: "verify", key: "small.bin", file: files.file("small-impostor.bin"), metadata: ["sha256": smallItem.sha256])
        #expect(try await destination.existingCopy(of: smallItem) == nil, "same size and metadata, other bytes")

        let big = S3TestFiles.bytes(12 << 20, seed: 2)
        var bigImpostor = big
        bigImpostor[7 << 20] ^= 0xFF
        try files.write("big.bin", big)
        try files.write("big-impostor.bin", bigImpostor)
        var bigItem = try S3TestFiles.item(files, "big.bin")
        bigItem.outcomeUnknown = true
        try await server.put(
            bucket: "verify", key: "big.bin", file: files.file("big-impostor.bin"), metadata: ["sha256": bigItem.sha256], partSize: 5 << 20)
        #expect(try await destination.existingCopy(of: bigItem) == nil, "a multipart ETag of other bytes")

        // The right bytes, in parts of another size: not provable with this plugin's part size, so sent again.
        try await server.put(bucket: "verify", key: "big.bin", file: files.file("big.bin"), partSize: 6 << 20)
        #expect(try await destination.existingCopy(of: bigItem) == nil)

        // What the plugin sent itself is recognised, in one PUT and in parts.
        _ = try await destination.upload(smallItem, progress: { _ in })
        let uploaded = try await destination.upload(bigItem, progress: { _ in })
        #expect(uploaded.etag?.hasSuffix("-3") == true)
        #expect(try await destination.existingCopy(of: smallItem)?.etag == S3TestFiles.md5(small))
        #expect(try await destination.existingCopy(of: bigItem)?.etag == uploaded.etag)
        // And the same bytes another tool wrote in one PUT, without metadata.
        try await server.put(bucket: "verify", key: "other.bin", file: files.file("small.bin"))
        var other = try S3TestFiles.item(files, "small.bin", remoteName: "other.bin")
        other.outcomeUnknown = true
        #expect(try await destination.existingCopy(of: other) != nil)
    }

    // MARK: Listings that do not end

    /// The bounds, lowered so that the test is quick (the CLI test meets the real ones): names, bytes of names, and
    /// empty pages in a row.
    @Test func endlessListingEndsWithAnError() async throws {
        let server = try await S3HostileServer(.endlessList)
        defer { server.stop() }
        let destination = Self.destination(server.endpoint)
        for (entries, nameBytes, pages, bound) in [(5_000, 64 << 20, 6, "more than 5000 names"), (400_000, 100_000, 3, "more than 400000 names (or 0 MiB of them)")] {
            let before = server.requests("GET").count
            do {
                _ = try await S3Listing(client: destination.client, maximumEntriesHere: entries, maximumNameBytesHere: nameBytes).run()
                Issue.record("an endless listing ended")
            } catch let error as DestinationError {
                #expect(error.code == "ListingTooLong")
                #expect(error.message.contains(bound), "\(error)")
                #expect(error.classification == Classification(.retryable()))
            }
            #expect(server.requests("GET").count - before == pages, "stopped at the bound")
        }
        await destination.finish()

        let empty = try await S3HostileServer(.endlessList, pageNames: 0)
        defer { empty.stop() }
        let emptyDestination = Self.destination(empty.endpoint)
        do {
            _ = try await emptyDestination.list()
            Issue.record("endless empty pages ended")
        } catch let error as DestinationError {
            #expect(error.code == "ListingLoop")
            #expect(error.message.contains("\(S3Listing.maximumEmptyPages) pages in a row without a name"), "\(error)")
        }
        #expect(empty.requests("GET").count == S3Listing.maximumEmptyPages)
        await emptyDestination.finish()
    }

    @Test func repeatedContinuationTokenIsAnError() async throws {
        let server = try await S3HostileServer(.repeatToken)
        defer { server.stop() }
        let destination = Self.destination(server.endpoint)
        do {
            _ = try await destination.list()
            Issue.record("a listing going round ended")
        } catch let error as DestinationError {
            #expect(error.code == "ListingLoop")
            #expect(error.message.contains("a second time"), "\(error)")
        }
        #expect(server.requests("GET").count == 2, "the token came back on the second page")
        await destination.finish()
    }

    // MARK: Huge answers

    @Test func hugeErrorBodyStaysRetryableAndIsNotReadWhole() async throws {
        let server = try await S3HostileServer(.hugeError, bodyMiB: 512)
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-huge")
        defer { files.remove() }
        try files.write("f.txt", "x")
        let destination = Self.destination(server.endpoint)
        let start = ContinuousClock.now
        for operation in ["upload", "list", "delete"] {
            do {
                switch operation {
                case "upload": _ = try await destination.upload(try S3TestFiles.item(files, "f.txt"), progress: { _ in })
                case "list": _ = try await destination.list()
                default: try await destination.delete(remoteName: "f.txt")
                }
                Issue.record("\(operation) succeeded against a 500")
            } catch let error as DestinationError {
                #expect(error.code == "InternalError", "\(operation): \(error)")
                #expect(error.classification == Classification(.retryable()), "\(operation): \(error)")
            }
        }
        // 512 MiB per answer were offered; the client read the first 64 KiB of each and hung up.
        #expect(Self.elapsed(since: start) < 60)
        let sent = server.log().split(separator: "\n").filter { $0.hasPrefix("huge answer:") }
        #expect(sent.count == 3 && sent.allSatisfy { !$0.contains("536870912 of") }, "\(sent)")
        await destination.finish()
    }

    @Test func hugeSuccessfulAnswerIsRefused() async throws {
        let server = try await S3HostileServer(.hugeAnswer, bodyMiB: 64)
        defer { server.stop() }
        let destination = Self.destination(server.endpoint)
        do {
            _ = try await destination.list()
            Issue.record("a 64 MiB listing page was read")
        } catch let error as DestinationError {
            #expect(error.code == "ResponseTooLarge")
            #expect(error.classification == Classification(.retryable()))
        }
        await destination.finish()
    }

    // MARK: A server that stalls

    @Test func everyRequestToAStalledServerEndsWithinTheRequestTimeout() async throws {
        let server = try await S3HostileServer(.stall, maxSeconds: 120)
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-stall")
        defer { files.remove() }
        try files.write("f.txt", "never answered")
        var unknown = try S3TestFiles.item(files, "f.txt")
        unknown.outcomeUnknown = true
        let item = unknown
        let destination = Self.destination(server.endpoint, requestTimeout: .seconds(1))
        let operations: [(String, @Sendable () async throws -> Void)] = [
            ("HeadObject", { _ = try await destination.existingCopy(of: item) }),
            ("PutObject", { _ = try await destination.upload(item, progress: { _ in }) }),
            ("ListObjectsV2", { _ = try await destination.list() }),
            ("DeleteObjects", { _ = try await destination.delete(remoteNames: ["f.txt"]) }),
            ("probe", { try await destination.probe() }),
        ]
        for (name, operation) in operations {
            let start = ContinuousClock.now
            do {
                try await operation()
                Issue.record("\(name) succeeded against a stalled server")
            } catch let error as DestinationError {
                #expect(error.code == "timeout", "\(name): \(error)")
                #expect(error.classification == Classification(.retryable()), "\(name)")
                #expect(error.message.contains(name), "\(error)")
            }
            let seconds = Self.elapsed(since: start)
            print("stalled \(name): ended after \(seconds) s")
            #expect(seconds < 15, "\(name) took \(seconds) s with a 1 s request timeout")
        }
        await destination.finish()
    }

    @Test func cancellingAnUploadToAStalledServerEndsAtOnceAndFinishIsBounded() async throws {
        let server = try await S3HostileServer(.stall, maxSeconds: 120)
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-stall-cancel")
        defer { files.remove() }
        try files.write("small.txt", "never answered")
        try files.write("big.bin", S3TestFiles.bytes(6 << 20, seed: 6))
        // A long request timeout: only the cancellation can end these quickly.
        let destination = Self.destination(
            server.endpoint, requestTimeout: .seconds(60), multipart: S3MultipartConfig(threshold: 5 << 20, partSize: 5 << 20, concurrency: 2))
        for name in ["small.txt", "big.bin"] {
            let item = try S3TestFiles.item(files, name)
            let task = Task { try await destination.upload(item, progress: { _ in }) }
            try await Task.sleep(for: .milliseconds(500))
            let start = ContinuousClock.now
            task.cancel()
            let result = await task.result
            let seconds = Self.elapsed(since: start)
            print("cancelled \(name): ended \(seconds) s after the cancel")
            #expect(seconds < 5, "\(name): \(seconds) s after the cancel")
            if case .success = result { Issue.record("\(name): a stalled upload succeeded") }
        }
        await destination.finish()

        // An upload kept for a next attempt is aborted by finish(), which a stalled server cannot hold up for long.
        let kept = Self.destination(server.endpoint, requestTimeout: .seconds(1))
        kept.resumeStore.keep("big.bin", S3MultipartResumeStore.Pending(uploadID: "u1", size: 1, partSize: 1, sha256: "", etags: [:]))
        let start = ContinuousClock.now
        await kept.finish()
        #expect(Self.elapsed(since: start) < 10)
        #expect(server.requests("DELETE").contains { $0.contains("uploadId=u1") })
    }
}
