import Foundation
import NIOHTTP1
import SyncgateCore

/// One multipart upload of one file: CreateMultipartUpload, parts sent `concurrency` at a time (each with its
/// own Content-MD5 and SHA-256, streamed from disk, its ETag checked against the MD5), CompleteMultipartUpload
/// with the parts in order. On any failure the upload is aborted so that no orphan parts are left.
/// Memory: one 1 MiB hashing buffer and one 256 KiB send chunk per part in flight, whatever `part_size` is.
struct S3MultipartUpload: Sendable {
    let client: S3Client
    let key: String
    let reader: FileReader
    let size: Int64
    let partSize: Int64
    let concurrency: Int
    let headers: [(name: String, value: String)]

    var partCount: Int { Int((size + partSize - 1) / partSize) }

    func run(progress: @escaping @Sendable (Int64) -> Void) async throws -> String {
        let display = client.settings.display(key: key)
        let created = try await client.send(
            .POST, key: key, query: [("uploads", "")], headers: headers,
            context: "CreateMultipartUpload \(display)")
        guard let root = S3XMLElement.parse(created.body), let uploadID = root.value("UploadId"), !uploadID.isEmpty else {
            throw DestinationError.retryable("CreateMultipartUpload \(display): the answer holds no UploadId", code: "MalformedXML")
        }
        do {
            let etags = try await sendParts(uploadID: uploadID, progress: progress)
            return try await complete(uploadID: uploadID, etags: etags)
        } catch {
            // Abort even when this task is cancelled: a fresh task is not.
            let client = self.client
            let key = self.key
            let abort = Task {
                _ = try? await client.send(
                    .DELETE, key: key, query: [("uploadId", uploadID)], context: "AbortMultipartUpload \(display)",
                    timeout: .seconds(30))
            }
            await abort.value
            throw error
        }
    }

    private func sendParts(uploadID: String, progress: @escaping @Sendable (Int64) -> Void) async throws -> [String] {
        let counter = S3ProgressCounter(total: progress)
        var etags = [String](repeating: "", count: partCount)
        try await withThrowingTaskGroup(of: (Int, String).self) { group in
            var next = 0
            func add() {
                let number = next + 1
                next += 1
                group.addTask { (number, try await sendPart(number, uploadID: uploadID, counter: counter)) }
            }
            while next < min(concurrency, partCount) { add() }
            while let (number, etag) = try await group.next() {
                etags[number - 1] = etag
                if next < partCount { add() }
            }
        }
        return etags
    }

    private func sendPart(_ number: Int, uploadID: String, counter: S3ProgressCounter) async throws -> String {
        try Task.checkCancellation()
        let offset = Int64(number - 1) * partSize
        let length = min(partSize, size - offset)
        let digest = try S3RangeDigest.compute(reader, offset: offset, length: length, sha256: true)
        let display = client.settings.display(key: key)
        let response = try await client.send(
            .PUT, key: key, query: [("partNumber", String(number)), ("uploadId", uploadID)],
            body: .file(
                reader, offset: offset, length: length, sha256: digest.sha256Hex!, md5Base64: digest.md5Base64,
                progress: { counter.set(part: number, bytes: $0) }),
            context: "UploadPart \(number)/\(partCount) of \(display)")
        guard let etag = response.headers.first(name: "ETag"), !etag.isEmpty else {
            throw DestinationError.retryable("UploadPart \(number) of \(display): the answer holds no ETag", code: "MissingETag")
        }
        let bare = S3Destination.unquote(etag)
        if S3Destination.isMD5(bare), bare.lowercased() != digest.md5Hex,
            response.headers.first(name: "x-amz-server-side-encryption") != "aws:kms"
        {
            throw DestinationError.retryable(
                "UploadPart \(number) of \(display): the server's ETag \(bare) is not the MD5 of the part (\(digest.md5Hex))",
                code: "BadDigest")
        }
        return etag
    }

    private func complete(uploadID: String, etags: [String]) async throws -> String {
        let display = client.settings.display(key: key)
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for (index, etag) in etags.enumerated() {
            xml += "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(S3XMLEscape.escape(etag))</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let response = try await client.send(
            .POST, key: key, query: [("uploadId", uploadID)], headers: [("Content-Type", "application/xml")],
            body: .bytes(Data(xml.utf8)), context: "CompleteMultipartUpload \(display)", timeout: .seconds(900))
        // S3 may answer 200 and still fail: the body is then an <Error>.
        guard let root = S3XMLElement.parse(response.body) else {
            throw DestinationError.retryable("CompleteMultipartUpload \(display): the answer is not XML", code: "MalformedXML")
        }
        if root.name == "Error" {
            throw S3ErrorResponse(status: 500, code: root.value("Code"), message: root.value("Message"), requestID: root.value("RequestId"))
                .destinationError("CompleteMultipartUpload \(display)")
        }
        return root.value("ETag") ?? response.headers.first(name: "ETag") ?? ""
    }
}
