import Foundation
import Logging
import NIOHTTP1
import SyncgateCore

/// Delivers files to a bucket of any S3-compatible server (AWS, MinIO, Ceph, OpenStack Swift s3api, moto):
/// SigV4-signed, streamed PutObject with Content-MD5 and the payload's SHA-256, multipart above the threshold,
/// HEAD-based skip of objects that already hold the bytes, ListObjectsV2 listing and DeleteObjects removal.
public final class S3Destination: Destination, @unchecked Sendable {
    public static let registration = PluginRegistration(
        type: "s3", summary: "any S3-compatible object storage (AWS S3, MinIO, Ceph, moto): SigV4, streaming multipart"
    ) { setup in
        let config = try setup.decode(S3Config.self)
        let settings: S3Settings
        do {
            settings = try S3Settings(config: config, environment: setup.environment)
        } catch let error as S3Settings.MissingCredentials {
            throw setup.invalid("access_key_id", error.description)
        }
        return S3Destination(settings: settings, logger: setup.logger)
    }

    public let settings: S3Settings
    let client: S3Client
    let logger: Logger
    let resumeStore = S3MultipartResumeStore()

    public init(settings: S3Settings, logger: Logger = Logger(label: "syncgate.s3")) {
        self.settings = settings
        self.logger = logger
        self.client = S3Client(settings: settings, logger: logger)
    }

    /// The largest key S3 accepts, in UTF-8 bytes.
    public static let maximumKeyBytes = 1024
    /// Keys per DeleteObjects request (S3's limit).
    public static let deleteBatchSize = 1000

    // MARK: Names

    /// The key is the configured prefix followed by the path.
    public var remoteNamesAreDistinct: Bool { true }

    public func remoteName(forRelativePath path: String) throws -> String {
        let key = settings.prefix + path
        guard key.utf8.count <= S3Destination.maximumKeyBytes else {
            throw DestinationError.permanent(
                "the key '\(key.prefix(80))...' is \(key.utf8.count) bytes long; S3 keys hold at most 1024", code: "KeyTooLongError")
        }
        return key
    }

    // MARK: Upload

    public func upload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt {
        let key = item.remoteName
        let reader = try FileReader(path: item.absolutePath)
        let size = try reader.currentSize()
        guard size == item.size else {
            throw DestinationError.permanent(
                "\(item.relativePath) changed since it was planned (\(item.size) bytes, now \(size)); it will be sent again on the next sync",
                code: "FileChanged")
        }
        var headers: [(name: String, value: String)] = [("x-amz-meta-sha256", item.sha256)]
        if let storageClass = settings.storageClass { headers.append(("x-amz-storage-class", storageClass)) }
        let display = settings.display(key: key)
        let etag: String
        if size >= settings.multipart.threshold {
            let partSize = settings.multipart.effectivePartSize(for: size)
            logger.debug("multipart upload", metadata: ["key": "\(display)", "size": "\(size)", "part_size": "\(partSize)"])
            let upload = S3MultipartUpload(
                client: client, key: key, reader: reader, size: size, partSize: partSize,
                concurrency: settings.multipart.concurrency, headers: headers, sha256: item.sha256,
                resumeStore: resumeStore)
            etag = try await upload.run(progress: progress)
        } else {
            let digest = try S3RangeDigest.compute(reader, offset: 0, length: size, sha256: false)
            let response = try await client.send(
                .PUT, key: key, headers: headers,
                body: .file(reader, offset: 0, length: size, sha256: item.sha256, md5Base64: digest.md5Base64, progress: progress),
                context: "PutObject \(display)")
            etag = response.headers.first(name: "ETag") ?? ""
            let bare = S3Destination.unquote(etag)
            if S3Destination.isMD5(bare), bare.lowercased() != digest.md5Hex,
                response.headers.first(name: "x-amz-server-side-encryption") != "aws:kms"
            {
                throw DestinationError.retryable(
                    "PutObject \(display): the server's ETag \(bare) is not the MD5 of the file (\(digest.md5Hex))", code: "BadDigest")
            }
        }
        progress(size)
        return Receipt(remoteName: key, etag: S3Destination.unquote(etag), detail: display, sha256: item.sha256)
    }

    // MARK: Skip what is already there

    /// HEAD the key: the same size and the `x-amz-meta-sha256` this plugin stores (or, for an object another
    /// tool wrote in one PUT, an ETag equal to the file's MD5) mean the bytes are already there.

    public func existingCopy(of item: UploadItem) async throws -> Receipt? {
        let key = item.remoteName
        let display = settings.display(key: key)
        let response: S3Client.Response
        do {
            response = try await client.send(.HEAD, key: key, context: "HeadObject \(display)")
        } catch let error as DestinationError where error.code == "http-404" || error.code == "NoSuchKey" {
            return nil
        }
        let length = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
        guard length == item.size else { return nil }
        let etag = S3Destination.unquote(response.headers.first(name: "ETag") ?? "")
        let receipt = Receipt(remoteName: key, etag: etag, detail: display, sha256: item.sha256)
        if let sha = response.headers.first(name: "x-amz-meta-sha256") {
            return sha.lowercased() == item.sha256.lowercased() ? receipt : nil
        }
        // An object another tool wrote: a plain ETag is the content's MD5.
        guard S3Destination.isMD5(etag) else { return nil }
        let reader = try FileReader(path: item.absolutePath)
        let digest = try S3RangeDigest.compute(reader, offset: 0, length: item.size, sha256: false)
        return digest.md5Hex == etag.lowercased() ? receipt : nil
    }

    // MARK: List

    public func list() async throws -> RemoteListing {
        let listing = try await listObjects(maxKeys: nil)
        return RemoteListing(entries: listing.entries)
    }

    /// ListObjectsV2 under the prefix, following continuation tokens; stops after `maxKeys` (then `complete`
    /// is false).
    func listObjects(maxKeys: Int?, pageSize: Int? = nil) async throws -> (entries: [RemoteListing.Entry], complete: Bool) {
        var entries: [RemoteListing.Entry] = []
        var token: String?
        repeat {
            var query: [(name: String, value: String)] = [("list-type", "2"), ("encoding-type", "url")]
            if !settings.prefix.isEmpty { query.append(("prefix", settings.prefix)) }
            if let token { query.append(("continuation-token", token)) }
            if let pageSize { query.append(("max-keys", String(pageSize))) }
            let response = try await client.send(
                .GET, key: nil, query: query, context: "ListObjectsV2 s3://\(settings.bucket)/\(settings.prefix)")
            guard let root = S3XMLElement.parse(response.body), root.name == "ListBucketResult" else {
                throw DestinationError.retryable("ListObjectsV2: the answer is not a ListBucketResult", code: "MalformedXML")
            }
            let encoded = root.value("EncodingType") == "url"
            for content in root.all("Contents") {
                guard let raw = content.value("Key") else { continue }
                let name = encoded ? S3URIEncoding.decode(raw, plusIsSpace: true) : raw
                entries.append(RemoteListing.Entry(name: name, size: content.value("Size").flatMap { Int64($0) }))
            }
            let truncated = root.value("IsTruncated") == "true"
            token = truncated ? root.value("NextContinuationToken") : nil
            if truncated && token == nil {
                throw DestinationError.retryable("ListObjectsV2: truncated answer without a continuation token", code: "MalformedXML")
            }
            if let maxKeys, entries.count >= maxKeys, token != nil { return (entries, false) }
        } while token != nil
        return (entries, true)
    }

    // MARK: Delete

    public func delete(remoteName: String) async throws {
        let failures = try await delete(remoteNames: [remoteName])
        if let failure = failures[remoteName] { throw failure }
    }

    /// Deletes many keys with DeleteObjects, up to 1000 per request (each with its Content-MD5). Returns each
    /// key's own error (keys not in the result were deleted or were not there). Throws when a whole request
    /// fails.
    /// DeleteObjects: up to 1000 keys a request.
    public var supportsBatchDelete: Bool { true }
    /// A PUT (or a completed multipart upload) replaces the object whole.
    public var resendIsHarmless: Bool { true }

    public func delete(remoteNames: [String]) async throws -> [String: DestinationError] {
        try await delete(remoteNames: remoteNames, batchSize: S3Destination.deleteBatchSize)
    }

    func delete(remoteNames: [String], batchSize: Int) async throws -> [String: DestinationError] {
        var failures: [String: DestinationError] = [:]
        var start = 0
        while start < remoteNames.count {
            let batch = Array(remoteNames[start..<min(start + batchSize, remoteNames.count)])
            start += batch.count
            var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>"
            for key in batch { xml += "<Object><Key>\(S3XMLEscape.escape(key))</Key></Object>" }
            xml += "</Delete>"
            let body = Data(xml.utf8)
            let md5 = Data(S3RangeDigest.md5(body)).base64EncodedString()
            let response = try await client.send(
                .POST, key: nil, query: [("delete", "")],
                headers: [("Content-Type", "application/xml"), ("Content-MD5", md5)], body: .bytes(body),
                context: "DeleteObjects s3://\(settings.bucket) (\(batch.count) keys)")
            guard let result = S3DeleteResult(response.body, display: settings.display(key:)) else {
                throw DestinationError.retryable("DeleteObjects: the answer is not a DeleteResult", code: "MalformedXML")
            }
            failures.merge(result.failures) { _, new in new }
        }
        return failures
    }

    // MARK: Classification and closing

    public func classify(_ error: any Error) -> Classification {
        Classification.of(error)
    }

    public func finish() async {
        // Uploads kept for a next attempt that did not come: abort them, so no orphan parts are left.
        for (key, uploadID) in resumeStore.drain() {
            _ = try? await client.send(
                .DELETE, key: key, query: [("uploadId", uploadID)], context: "AbortMultipartUpload \(settings.display(key: key))",
                timeout: .seconds(30))
        }
        await client.shutdown()
    }

    // MARK: Helpers

    static func unquote(_ etag: String) -> String {
        var text = etag.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("W/") { text.removeFirst(2) }
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = String(text.dropFirst().dropLast()) }
        return text
    }

    /// Whether an ETag is a plain MD5 (32 hex digits), as for objects sent in one PUT without SSE-KMS.
    static func isMD5(_ etag: String) -> Bool {
        etag.count == 32 && etag.allSatisfy(\.isHexDigit)
    }
}
