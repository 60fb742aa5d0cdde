import Foundation
import Logging
import SyncgateCore
import SyncgateTestSupport
import Testing
@testable import SyncgateS3

/// The destination against a real moto S3 server on loopback with signature checking on (IAM user + key, then
/// reset-auth), read back with boto3.
@Suite("S3Destination against moto", .enabled(if: S3TestGate.motoEnabled, S3TestGate.motoComment))
struct S3DestinationMotoTests {
    static func destination(
        _ server: S3TestServer, bucket: String, prefix: String = "", secret: String? = nil, accessKey: String? = nil,
        multipart: S3MultipartConfig = S3MultipartConfig()
    ) -> S3Destination {
        S3Destination(settings: S3Settings(
            endpoint: URL(string: server.endpoint)!, region: "us-east-1", bucket: bucket, prefix: prefix, pathStyle: true,
            credentials: SigV4Credentials(
                accessKeyID: accessKey ?? server.accessKeyID, secretAccessKey: secret ?? server.secretAccessKey),
            multipart: multipart))
    }

    @Test func smallFilesZeroByteListSkipAndDelete() async throws {
        let server = try await S3TestServer(buckets: ["small"])
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-small")
        defer { files.remove() }
        try files.write("a.txt", "hello s3\n")
        try files.write("dir/with space.bin", S3TestFiles.bytes(300_000, seed: 7))
        try files.write("empty.txt", Data())
        try files.write("odd ~#?.txt", "awkward but accepted by moto")
        let destination = Self.destination(server, bucket: "small", prefix: "outbox-")
        defer { Task { await destination.finish() } }

        let paths = ["a.txt", "dir/with space.bin", "empty.txt", "odd ~#?.txt"]
        var items: [UploadItem] = []
        for path in paths {
            items.append(try S3TestFiles.item(files, path, remoteName: try destination.remoteName(forRelativePath: path)))
        }
        for item in items {
            #expect(try await destination.existingCopy(of: item) == nil, "nothing there yet: \(item.remoteName)")
            let seen = S3ProgressLog()
            let receipt = try await destination.upload(item, progress: { seen.add($0) })
            #expect(receipt.remoteName == "outbox-" + item.relativePath)
            #expect(receipt.etag == S3TestFiles.md5(try files.read(item.relativePath)))
            #expect(seen.last == item.size)
        }

        // Read back with boto3 and compare bytes.
        let readBack = try TemporaryDirectory("s3-readback")
        defer { readBack.remove() }
        let stored = try await server.objects(bucket: "small", into: readBack.url)
        #expect(Set(stored.keys) == Set(paths.map { "outbox-" + $0 }))
        for path in paths {
            let object = try #require(stored["outbox-" + path])
            #expect(object.data == (try files.read(path)), "\(path) bytes")
            #expect(object.metadata["sha256"] == S3TestFiles.sha256(try files.read(path)))
        }

        // ls
        let listing = try await destination.list()
        #expect(listing.names == Set(paths.map { "outbox-" + $0 }))
        #expect(listing.entries.first { $0.name == "outbox-empty.txt" }?.size == 0)

        // Skip: the same bytes are there (the ETag is their MD5); other bytes (another SHA-256) are not.
        let fresh = ["a.txt", "empty.txt"].compactMap { path in items.first { $0.relativePath == path } }
        for item in fresh {
            let copy = try await destination.existingCopy(of: item)
            #expect(copy?.remoteName == item.remoteName)
            #expect(copy?.etag == S3TestFiles.md5(try files.read(item.relativePath)))
        }
        var changed = items[0]
        changed.sha256 = String(repeating: "0", count: 64)
        #expect(try await destination.existingCopy(of: changed) == nil)

        // An object another tool wrote (no sha256 metadata): compared by its MD5 ETag.
        try files.write("foreign.txt", "written by boto3")
        try await server.put(bucket: "small", key: "outbox-foreign.txt", file: files.file("foreign.txt"))
        let foreign = try S3TestFiles.item(files, "foreign.txt", remoteName: "outbox-foreign.txt")
        #expect(try await destination.existingCopy(of: foreign)?.etag == S3TestFiles.md5(Data("written by boto3".utf8)))

        // rm: DeleteObjects in one batch, then single delete; deleting a missing key is not an error.
        let failures = try await destination.delete(remoteNames: ["outbox-a.txt", "outbox-empty.txt", "outbox-never-there"])
        #expect(failures.isEmpty)
        try await destination.delete(remoteName: "outbox-foreign.txt")
        #expect(try await destination.list().names == Set(["outbox-dir/with space.bin", "outbox-odd ~#?.txt"]))
        #expect(server.requests("POST").contains { $0.contains("?delete") })
    }

    @Test func multipart40MiB() async throws {
        let server = try await S3TestServer(buckets: ["big"])
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-big")
        defer { files.remove() }
        let content = S3TestFiles.bytes(40 << 20, seed: 40)
        try files.write("big.bin", content)
        let destination = Self.destination(
            server, bucket: "big", multipart: S3MultipartConfig(threshold: 16 << 20, partSize: 5 << 20, concurrency: 4))
        defer { Task { await destination.finish() } }
        let item = try S3TestFiles.item(files, "big.bin")
        let seen = S3ProgressLog()
        let receipt = try await destination.upload(item, progress: { seen.add($0) })
        #expect(receipt.etag?.hasSuffix("-8") == true, "8 parts of 5 MiB: \(receipt.etag ?? "nil")")
        #expect(seen.last == 40 << 20)
        #expect(seen.max <= 40 << 20)
        #expect(server.requests("PUT").filter { $0.contains("partNumber=") }.count == 8)

        let readBack = try TemporaryDirectory("s3-big-readback")
        defer { readBack.remove() }
        let stored = try await server.objects(bucket: "big", into: readBack.url)
        #expect(stored["big.bin"]?.size == 40 << 20)
        #expect(stored["big.bin"]?.data == content)
        #expect(try await server.openMultipartUploads(bucket: "big") == 0)
        // The skip check recomputes the multipart ETag of the file (8 parts of 5 MiB) and finds it equal.
        #expect(try await destination.existingCopy(of: item) != nil)
    }

    @Test func multipartIsAbortedOnPermanentFailure() async throws {
        let server = try await S3TestServer(buckets: ["abort"])
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-abort")
        defer { files.remove() }
        try files.write("shrinks.bin", S3TestFiles.bytes(12 << 20, seed: 3))
        let destination = Self.destination(
            server, bucket: "abort", multipart: S3MultipartConfig(threshold: 5 << 20, partSize: 5 << 20, concurrency: 1))
        defer { Task { await destination.finish() } }
        let item = try S3TestFiles.item(files, "shrinks.bin")
        let path = files.file("shrinks.bin").path
        // The file shrinks while part 1 is being sent: later reads fail with the core's FileChangedError.
        let truncated = S3ProgressLog()
        do {
            _ = try await destination.upload(item, progress: { bytes in
                if truncated.last == nil { _ = truncate(path, 1 << 20) }
                truncated.add(bytes)
            })
            Issue.record("the upload of a shrinking file succeeded")
        } catch let error as FileChangedError {
            #expect(error.description.contains("changed while it was being sent"), "\(error)")
        }
        #expect(server.requests("POST").contains { $0.contains("?uploads") })
        #expect(server.requests("DELETE").contains { $0.contains("uploadId=") }, "AbortMultipartUpload sent")
        #expect(try await server.openMultipartUploads(bucket: "abort") == 0, "no orphan parts")
    }

    @Test func wrongCredentialsBlockTheDestinationWithTheS3Code() async throws {
        let server = try await S3TestServer(buckets: ["auth"])
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-auth")
        defer { files.remove() }
        try files.write("f.txt", "x")
        let item = try S3TestFiles.item(files, "f.txt")

        let wrongSecret = "Wrong/Secret+Key0000000000000000000000000"
        let badSecret = Self.destination(server, bucket: "auth", secret: wrongSecret)
        await #expect(throws: DestinationError.self) { try await badSecret.upload(item, progress: { _ in }) }
        do {
            _ = try await badSecret.upload(item, progress: { _ in })
        } catch let error as DestinationError {
            #expect(error.classification == Classification(.permanent, scope: .destination), "blocked")
            #expect(error.code == "SignatureDoesNotMatch")
            #expect(error.message.contains("HTTP 403 SignatureDoesNotMatch"))
            #expect(!error.message.contains(wrongSecret))
            #expect(badSecret.classify(error) == Classification(.permanent, scope: .destination))
        }
        await badSecret.finish()

        let badKey = Self.destination(server, bucket: "auth", accessKey: "AKIANOSUCHKEY0000000")
        do {
            _ = try await badKey.list()
            Issue.record("listing with an unknown key succeeded")
        } catch let error as DestinationError {
            #expect(error.code == "InvalidAccessKeyId")
            #expect(error.classification == Classification(.permanent, scope: .destination))
        }
        await badKey.finish()

        let noBucket = Self.destination(server, bucket: "no-such-bucket")
        do {
            _ = try await noBucket.upload(item, progress: { _ in })
            Issue.record("upload to a missing bucket succeeded")
        } catch let error as DestinationError {
            #expect(error.code == "NoSuchBucket")
            #expect(error.classification == Classification(.permanent, scope: .destination))
        }
        await noBucket.finish()
    }

    @Test func stoppedServerIsRetryableThenDelivered() async throws {
        let port = Loopback.freePort()
        let files = try TemporaryDirectory("s3-stopped")
        defer { files.remove() }
        try files.write("later.txt", "delivered after the restart")
        let item = try S3TestFiles.item(files, "later.txt")
        let down = S3Destination(settings: S3Settings(
            endpoint: URL(string: "http://127.0.0.1:\(port)")!, region: "us-east-1", bucket: "later",
            credentials: SigV4Credentials(accessKeyID: "AKIAEXAMPLE", secretAccessKey: "not-used-secret")))
        do {
            _ = try await down.upload(item, progress: { _ in })
            Issue.record("upload to a stopped server succeeded")
        } catch {
            #expect(down.classify(error) == Classification(.retryable(), scope: .destination), "unavailable: \(error)")
            #expect((error as? DestinationError)?.code == "connection")
        }
        await down.finish()

        let server = try await S3TestServer(port: port, buckets: ["later"])
        defer { server.stop() }
        let up = Self.destination(server, bucket: "later")
        _ = try await up.upload(item, progress: { _ in })
        await up.finish()
        let readBack = try TemporaryDirectory("s3-later")
        defer { readBack.remove() }
        #expect(try await server.objects(bucket: "later", into: readBack.url)["later.txt"]?.data == Data("delivered after the restart".utf8))
    }

    /// The full awkward alphabet round-trips through a real server (moto with signature checking off: with it on,
    /// moto itself miscomputes signatures for these keys; the signer vectors and botocore cover signing).
    @Test func awkwardKeysRoundTripWithSignatureCheckingOff() async throws {
        let server = try await S3TestServer(auth: false, buckets: ["awkward"])
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-awkward")
        defer { files.remove() }
        let destination = Self.destination(server, bucket: "awkward")
        defer { Task { await destination.finish() } }
        let keys = S3KeyEncodingTests.awkwardKeys
        var expected: [String: Data] = [:]
        for (index, key) in keys.enumerated() {
            let data = Data("content of \(key)".utf8)
            try files.write("f\(index)", data)
            var item = try S3TestFiles.item(files, "f\(index)")
            item.remoteName = key
            _ = try await destination.upload(item, progress: { _ in })
            expected[key] = data
        }
        let readBack = try TemporaryDirectory("s3-awkward-readback")
        defer { readBack.remove() }
        let stored = try await server.objects(bucket: "awkward", into: readBack.url)
        #expect(Set(stored.keys) == Set(expected.keys))
        for (key, data) in expected { #expect(stored[key]?.data == data, "\(key)") }
        #expect(try await destination.list().names == Set(expected.keys))
        let failures = try await destination.delete(remoteNames: Array(expected.keys))
        #expect(failures.isEmpty)
        #expect(try await destination.list().names.isEmpty)
    }

    /// Cancelling an upload mid-way (Ctrl-C, the attempt timeout) keeps the multipart upload for a next attempt, and
    /// finishing the destination aborts it: no orphan parts.
    @Test func cancelledMultipartIsAborted() async throws {
        let server = try await S3TestServer(buckets: ["cancel"])
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-cancel")
        defer { files.remove() }
        try files.write("big.bin", S3TestFiles.bytes(30 << 20, seed: 11))
        let destination = Self.destination(
            server, bucket: "cancel", multipart: S3MultipartConfig(threshold: 5 << 20, partSize: 5 << 20, concurrency: 1))
        let item = try S3TestFiles.item(files, "big.bin")
        let seen = S3ProgressLog()
        let task = Task { try await destination.upload(item, progress: { seen.add($0) }) }
        // Wait (bounded) until more than one part has gone out, then cancel.
        let deadline = Date().addingTimeInterval(30)
        while (seen.last ?? 0) < 6 << 20 && Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        task.cancel()
        let result = await task.result
        if case .success = result { Issue.record("the cancelled upload completed") }
        await destination.finish()
        #expect(server.requests("DELETE").contains { $0.contains("uploadId=") }, "AbortMultipartUpload sent")
        #expect(try await server.openMultipartUploads(bucket: "cancel") == 0, "no orphan parts: \(server.log().split(separator: "\n").filter { $0.contains("uploadId") || $0.contains("uploads") })")
        let readBack = try TemporaryDirectory("s3-cancel-readback")
        defer { readBack.remove() }
        #expect(try await server.objects(bucket: "cancel", into: readBack.url).isEmpty)
    }

    /// ListObjectsV2 follows continuation tokens; DeleteObjects splits into batches (small pages and batches here, so
    /// a handful of objects exercise both).
    @Test func listingPagesAndDeleteBatches() async throws {
        let server = try await S3TestServer(buckets: ["pages"])
        defer { server.stop() }
        let files = try TemporaryDirectory("s3-pages")
        defer { files.remove() }
        let destination = Self.destination(server, bucket: "pages")
        defer { Task { await destination.finish() } }
        var names: Set<String> = []
        for index in 0..<7 {
            try files.write("f\(index).txt", "file \(index)")
            let item = try S3TestFiles.item(files, "f\(index).txt")
            _ = try await destination.upload(item, progress: { _ in })
            names.insert(item.remoteName)
        }
        let paged = try await destination.listObjects(maxKeys: nil, pageSize: 2)
        #expect(paged.complete)
        #expect(Set(paged.entries.map(\.name)) == names)
        #expect(paged.entries.count == 7)
        #expect(server.requests("GET").filter { $0.contains("list-type=2") }.count == 4, "4 pages of at most 2")
        let capped = try await destination.listObjects(maxKeys: 3, pageSize: 2)
        #expect(!capped.complete)

        let failures = try await destination.delete(remoteNames: Array(names), batchSize: 3)
        #expect(failures.isEmpty)
        #expect(server.requests("POST").filter { $0.contains("?delete") }.count == 3, "7 keys in batches of 3")
        #expect(try await destination.list().entries.isEmpty)
    }
}
