import Foundation
import NIOHTTP1
import SyncgateCore

/// One multipart upload of one file: CreateMultipartUpload, parts sent `concurrency` at a time (each with its
/// own Content-MD5 and SHA-256, streamed from disk, its ETag checked against the MD5), CompleteMultipartUpload
/// with the parts in order, once the file is checked unchanged; the ETag it answers is checked against the one the
/// parts' MD5s make. On a permanent failure, or a file that changed, the upload is aborted so that no orphan parts
/// are left; after a retryable one or a cancellation it is kept for the next attempt, which sends only the missing
/// parts, and the destination aborts whatever is still kept when it finishes (so a cancelled attempt does not wait
/// for an abort on a server that may be stalled).
/// Memory: one 256 KiB hashing buffer and one 256 KiB send chunk per part in flight, whatever `part_size` is.
struct S3MultipartUpload: Sendable {
    let client: S3Client
    let key: String
    let reader: FileReader
    let size: Int64
    let partSize: Int64
    let concurrency: Int
    let headers: [(name: String, value: String)]

    var partCount: Int { Int((size + partSize - 1) / partSize) }

    /// The file's SHA-256 (an interrupted upload is resumed only for the same bytes).
    let sha256: String
    let resumeStore: S3MultipartResumeStore
    /// Throws ``FileChangedError`` when the file changed since it was planned (called before completing).
    let verifyUnchanged: @Sendable () throws -> Void

    func run(progress: @escaping @Sendable (Int64) -> Void) async throws -> S3ETag {
        if let (previous, fromLedger) = resumeStore.take(key) {
            if previous.size == size && previous.partSize == partSize && previous.sha256 == sha256 {
                do {
                    var upload = previous
                    if fromLedger { upload.etags = try await partsTheServerHolds(previous) }
                    return try await run(resuming: upload, progress: progress)
                } catch let error as DestinationError where error.code == "NoSuchUpload" {
                    // The server forgot the upload (aborted, expired): start afresh.
                    resumeStore.forget(key)
                }
            } else {
                // Another version of the file, or another part size: its parts are of no use.
                if await S3MultipartUpload.abort(client: client, key: key, uploadID: previous.uploadID) {
                    resumeStore.forget(key)
                } else {
                    resumeStore.abandon(key, uploadID: previous.uploadID)
                }
            }
        }
        let display = client.settings.display(key: key)
        let created = try await client.send(
            .POST, key: key, query: [("uploads", "")], headers: headers,
            context: "CreateMultipartUpload \(display)")
        guard let root = S3XMLElement.parse(created.body), let uploadID = root.value("UploadId"), !uploadID.isEmpty else {
            throw DestinationError.retryable("CreateMultipartUpload \(display): the answer holds no UploadId", code: "MalformedXML")
        }
        let fresh = S3MultipartResumeStore.Pending(uploadID: uploadID, size: size, partSize: partSize, sha256: sha256, etags: [:])
        resumeStore.record(key, fresh)
        return try await run(resuming: fresh, progress: progress)
    }

    /// The parts of an upload recorded by an earlier run that still count: those the server lists (ListParts) with
    /// the right size and an ETag that is the MD5 of the file's bytes at that place now (read from disk: the ledger
    /// may have missed the last parts before a crash, and a file rewritten in place with the same size and time
    /// must not keep parts of its old bytes).
    private func partsTheServerHolds(_ upload: S3MultipartResumeStore.Pending) async throws -> [Int: String] {
        let display = client.settings.display(key: key)
        var listed: [Int: (etag: String, size: Int64)] = [:]
        var marker: String? = nil
        repeat {
            var query: [(name: String, value: String)] = [("uploadId", upload.uploadID)]
            if let marker { query.append(("part-number-marker", marker)) }
            let response = try await client.send(.GET, key: key, query: query, context: "ListParts \(display)")
            guard let root = S3XMLElement.parse(response.body) else {
                throw DestinationError.retryable("ListParts \(display): the answer is not XML", code: "MalformedXML")
            }
            for part in root.all("Part") {
                guard let number = part.value("PartNumber").flatMap(Int.init), let etag = part.value("ETag"),
                      let size = part.value("Size").flatMap(Int64.init) else { continue }
                listed[number] = (etag, size)
            }
            let next = root.value("NextPartNumberMarker")
            marker = root.value("IsTruncated") == "true" && next != marker ? next : nil
        } while marker != nil
        var holds: [Int: String] = [:]
        for number in 1...partCount {
            guard let part = listed[number], part.size == partLength(number) else { continue }
            let etag = S3ETag(part.etag)
            guard etag.isMD5 else { continue }
            let digest = try S3RangeDigest.compute(reader, offset: Int64(number - 1) * partSize, length: partLength(number), sha256: false)
            if digest.md5Hex == etag.value { holds[number] = part.etag }
        }
        client.logger.info("resuming the multipart upload of \(display): \(holds.count) of \(partCount) parts are already there")
        return holds
    }

    /// Sends the parts `upload` does not hold yet, then completes it. On a retryable failure or a cancellation the
    /// upload and its acknowledged parts are kept for the next attempt (or ``S3Destination/finish()``'s abort); on
    /// any other failure it is aborted.
    private func run(resuming upload: S3MultipartResumeStore.Pending, progress: @escaping @Sendable (Int64) -> Void) async throws -> S3ETag {
        let resumeStore = self.resumeStore, key = self.key
        let parts = S3PartLedger(upload.etags) { etags in
            var progressed = upload
            progressed.etags = etags
            resumeStore.record(key, progressed)
        }
        let etags: [String]
        let completed: S3ETag
        do {
            etags = try await sendParts(uploadID: upload.uploadID, parts: parts, progress: progress)
            try verifyUnchanged()
            completed = try await complete(uploadID: upload.uploadID, etags: etags)
        } catch {
            let cancelled = Task.isCancelled || error is CancellationError
            let resumable = cancelled
                || (Classification.of(error).failureClass.isRetryable && !(error is FileChangedError)
                    && (error as? DestinationError)?.code != "NoSuchUpload")
            if resumable {
                var kept = upload
                kept.etags = parts.snapshot
                resumeStore.keep(key, kept)
            } else if await S3MultipartUpload.abort(client: client, key: key, uploadID: upload.uploadID) {
                resumeStore.forget(key)
            } else {
                resumeStore.abandon(key, uploadID: upload.uploadID)
            }
            throw error
        }
        resumeStore.forget(key)
        try verifyCompleted(completed, partETags: etags)
        return completed
    }

    /// The completed object's ETag must be the one its parts make (when the server answers in that form, and the
    /// parts' ETags are their MD5s): anything else means it assembled other bytes. The upload is over, so the next
    /// attempt starts afresh.
    private func verifyCompleted(_ etag: S3ETag, partETags: [String]) throws {
        guard etag.multipartCount != nil else { return }
        let md5s = partETags.compactMap { S3ETag($0).md5Bytes }
        guard md5s.count == partETags.count else { return }
        let expected = S3ETag.multipart(partMD5s: md5s)
        if etag != expected {
            throw DestinationError.retryable(
                "CompleteMultipartUpload \(client.settings.display(key: key)): the server's ETag \(etag) is not the one of the parts sent (\(expected)): it assembled other bytes",
                code: "BadDigest")
        }
    }

    /// AbortMultipartUpload, tried twice (a first try can go out just as a failed part's connection is torn down),
    /// each bounded by the request timeout, not again after a timeout, and not at all once the calling task is
    /// cancelled. Returns whether the upload is gone; the caller keeps it for ``S3Destination/finish()`` otherwise
    /// (an upload left open keeps its parts until a lifecycle rule removes them).
    @discardableResult
    static func abort(client: S3Client, key: String, uploadID: String) async -> Bool {
        let display = client.settings.display(key: key)
        for attempt in 1...2 {
            do {
                _ = try await client.send(.DELETE, key: key, query: [("uploadId", uploadID)], context: "AbortMultipartUpload \(display)")
                return true
            } catch let error as DestinationError where error.code == "NoSuchUpload" {
                return true  // already gone
            } catch {
                let last = attempt == 2 || Task.isCancelled || (error as? DestinationError)?.code == "timeout"
                if last {
                    client.logger.warning("\(DeliveryLayer.describe(error)); the upload's parts stay until it is aborted")
                    return false
                }
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        return false
    }

    private func sendParts(uploadID: String, parts: S3PartLedger, progress: @escaping @Sendable (Int64) -> Void) async throws -> [String] {
        let counter = S3ProgressCounter(total: progress)
        let done = parts.snapshot
        for number in done.keys { counter.set(part: number, bytes: partLength(number)) }
        let missing = (1...partCount).filter { done[$0] == nil }
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            func add() {
                let number = missing[next]
                next += 1
                group.addTask { parts.record(number, try await sendPart(number, uploadID: uploadID, counter: counter)) }
            }
            while next < min(concurrency, missing.count) { add() }
            while try await group.next() != nil {
                if next < missing.count { add() }
            }
        }
        let etags = parts.snapshot
        return (1...partCount).map { etags[$0] ?? "" }
    }

    private func partLength(_ number: Int) -> Int64 {
        min(partSize, size - Int64(number - 1) * partSize)
    }

    private func sendPart(_ number: Int, uploadID: String, counter: S3ProgressCounter) async throws -> String {
        try Task.checkCancellation()
        let offset = Int64(number - 1) * partSize
        let length = partLength(number)
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
        let bare = S3ETag(etag)
        if bare.isMD5, bare.value != digest.md5Hex, !S3Destination.etagIsNotMD5(response.headers) {
            throw DestinationError.retryable(
                "UploadPart \(number) of \(display): the server's ETag \(bare) is not the MD5 of the part (\(digest.md5Hex))",
                code: "BadDigest")
        }
        return etag
    }

    private func complete(uploadID: String, etags: [String]) async throws -> S3ETag {
        let display = client.settings.display(key: key)
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for (index, etag) in etags.enumerated() {
            xml += "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(S3XMLEscape.escape(etag))</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let response = try await client.send(
            .POST, key: key, query: [("uploadId", uploadID)], headers: [("Content-Type", "application/xml")],
            body: .bytes(Data(xml.utf8)), context: "CompleteMultipartUpload \(display)", limit: .complete)
        // S3 may answer 200 and still fail: the body is then an <Error>.
        guard let root = S3XMLElement.parse(response.body) else {
            throw DestinationError.retryable("CompleteMultipartUpload \(display): the answer is not XML", code: "MalformedXML")
        }
        if root.name == "Error" {
            throw S3ErrorResponse(status: 500, code: root.value("Code"), message: root.value("Message"), requestID: root.value("RequestId"))
                .destinationError("CompleteMultipartUpload \(display)")
        }
        return S3ETag(root.value("ETag") ?? response.headers.first(name: "ETag") ?? "")
    }
}
