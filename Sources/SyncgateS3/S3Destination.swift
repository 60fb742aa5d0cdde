import Foundation
import Logging
import NIOHTTP1
import SyncgateCore
import SyncgateNetwork
import Synchronization

/// Delivers files to a bucket of any S3-compatible server (AWS, MinIO, Ceph, OpenStack Swift s3api, moto):
/// SigV4-signed, streamed PutObject with Content-MD5 and the payload's SHA-256, multipart above the threshold,
/// HEAD-based skip of objects that already hold the bytes, ListObjectsV2 listing and DeleteObjects removal.
public final class S3Destination: Destination, Sendable {
    public static let registration = PluginRegistration(
        type: "s3", summary: "any S3-compatible object storage (AWS S3, MinIO, Ceph, moto): SigV4, streaming multipart"
    , decode: { setup in
        let config = try setup.decode(S3Config.self)
        if let (key, message) = config.crossCheck() { throw setup.invalid(key, message) }
        let settings: S3Settings
        do {
            settings = try S3Settings(
                config: config, environment: setup.environment, requireCredentials: !setup.readsLedgerOnly, resolvePath: setup.resolvePath)
        } catch let error as S3Settings.MissingCredentials {
            throw setup.invalid(error.key, error.description)
        } catch let error as NetworkSettingsError {
            throw setup.invalid(error.key, error.message)
        }
        setup.describe("credentials: \(settings.credentialsDescription)")
        let endpoint = "\(settings.scheme)://\(settings.host)\(settings.port.map { ":\($0)" } ?? "")"
        setup.deliversTo("s3://\(settings.bucket)/\(settings.prefix) at \(endpoint)",
                         identity: [endpoint, settings.bucket, settings.prefix].joined(separator: "\u{0}"))
        if settings.network.isSet, let origin = URL(string: settings.origin) { setup.describe("network: \(settings.network.describe(origin))") }
        return { S3Destination(settings: settings, logger: setup.logger) }
    })

    public let settings: S3Settings
    let client: S3Client
    let logger: Logger
    let resumeStore: S3MultipartResumeStore
    /// When ``abortStaleUploads()`` last looked (it looks at most hourly).
    private let staleCheckedAt = Mutex<Date?>(nil)
    /// What the bucket holds in the folders of this pass's new files (``S3Settings/existing`` `check`).
    let existing = S3ExistingObjects()

    public init(settings: S3Settings, logger: Logger = Logger(label: "syncgate.s3")) {
        self.settings = settings
        self.logger = logger
        self.client = S3Client(settings: settings, logger: logger)
        self.resumeStore = S3MultipartResumeStore(logger: { logger.warning("\($0)") })
    }

    /// Multipart uploads are kept in the ledger from now on, so that a later run resumes them.
    public func useResumeStore(_ store: ResumeStore) {
        resumeStore.use(store)
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
            throw FileChangedError(path: item.relativePath, detail: "size \(item.size) -> \(size) since it was planned")
        }
        var headers: [(name: String, value: String)] = [("x-amz-meta-sha256", item.sha256)] + settings.objects.headers(forKey: key)
        if let storageClass = settings.storageClass { headers.append(("x-amz-storage-class", storageClass)) }
        let display = settings.display(key: key)
        let etag: S3ETag
        if size >= settings.multipart.threshold {
            let partSize = settings.multipart.effectivePartSize(for: size)
            logger.debug("multipart upload", metadata: ["key": "\(display)", "bytes": .stringConvertible(size), "part_size": .stringConvertible(partSize)])
            let upload = S3MultipartUpload(
                client: client, key: key, reader: reader, size: size, partSize: partSize,
                concurrency: settings.multipart.concurrency, headers: headers, sha256: item.sha256,
                resumeStore: resumeStore, verifyUnchanged: { try item.verifyUnchanged() })
            etag = try await upload.run(progress: progress)
        } else {
            let digest = try S3RangeDigest.compute(reader, offset: 0, length: size, sha256: false)
            let response = try await client.send(
                .PUT, key: key, headers: headers,
                body: .file(reader, offset: 0, length: size, sha256: item.sha256, md5Base64: digest.md5Base64, progress: progress),
                context: "PutObject \(display)")
            etag = S3ETag(response.headers.first(name: "ETag") ?? "")
            if etag.isMD5, etag.value != digest.md5Hex, !S3Destination.etagIsNotMD5(response.headers) {
                throw DestinationError.retryable(
                    "PutObject \(display): the server's ETag \(etag) is not the MD5 of the file (\(digest.md5Hex)): it stored other bytes",
                    code: "BadDigest")
            }
        }
        progress(size)
        return Receipt(remoteName: key, etag: etag.value, detail: display, sha256: item.sha256)
    }

    // MARK: Skip what is already there

    /// HEAD the key. The copy there counts only when a checksum the server computed proves it holds these bytes:
    /// an `x-amz-checksum-sha256` of the whole object equal to the file's SHA-256, a plain ETag equal to the file's
    /// MD5, or a multipart ETag equal to the one the file's parts would have with the part size this plugin uses.
    /// The `x-amz-meta-sha256` this plugin stores is only an echo of what it sent: it can rule a copy out, never in.
    /// Anything else (another part size, SSE-KMS or SSE-C, a 403 for a key that may not read) means "send it".
    public func existingCopy(of item: UploadItem) async throws -> Receipt? {
        let key = item.remoteName
        let display = settings.display(key: key)
        switch existing.lookup(key) {
        case .absent:
            return nil
        case .present(let object):
            return try listedCopy(object, of: item)
        case .unknown:
            break
        }
        let response: S3Client.Response
        do {
            response = try await client.send(.HEAD, key: key, headers: [("x-amz-checksum-mode", "ENABLED")], context: "HeadObject \(display)")
        } catch let error as DestinationError where error.scope == .file && ["http-404", "NoSuchKey", "http-403", "AccessDenied"].contains(error.code) {
            return nil
        }
        let headers = response.headers
        guard headers.first(name: "Content-Length").flatMap({ Int64($0) }) == item.size else { return nil }
        if let echoed = headers.first(name: "x-amz-meta-sha256"), echoed.lowercased() != item.sha256.lowercased() { return nil }
        let etag = S3ETag(headers.first(name: "ETag") ?? "")
        let receipt = Receipt(remoteName: key, etag: etag.value, detail: display, sha256: item.sha256)
        if let checksum = S3Destination.fullObjectSHA256(headers) {
            return checksum == item.sha256.lowercased() ? receipt : nil
        }
        guard !S3Destination.etagIsNotMD5(headers) else { return nil }
        return try self.etag(etag, isTheOneOf: item) ? receipt : nil
    }

    /// Whether `etag` is the one the file's bytes make: their MD5, or the multipart ETag of their parts at this
    /// plugin's part size (the file is read once).
    func etag(_ etag: S3ETag, isTheOneOf item: UploadItem) throws -> Bool {
        let reader = try FileReader(path: item.absolutePath)
        guard try reader.currentSize() == item.size else { return false }
        if etag.isMD5 {
            return try S3RangeDigest.compute(reader, offset: 0, length: item.size, sha256: false).md5Hex == etag.value
        }
        let partSize = settings.multipart.effectivePartSize(for: item.size)
        let parts = item.size == 0 ? 1 : Int((item.size + partSize - 1) / partSize)
        guard let count = etag.multipartCount, count == parts else { return false }
        return try S3ETag.multipart(of: reader, size: item.size, partSize: partSize) == etag
    }

    /// `existing: check`: a file the ledger does not know is first looked for in the bucket.
    public var checksNewFiles: Bool { settings.existing == .check }

    /// Lists the folders of the files about to go whose outcome is unknown (with `existing: check`, every file new
    /// to the ledger), one ListObjectsV2 each, so that ``existingCopy(of:)`` needs no HEAD per file. A folder that
    /// cannot be listed is left to HEAD.
    public func prepare(_ items: [UploadItem]) async throws -> [String: DestinationError] {
        if items.contains(where: { $0.size >= settings.multipart.threshold }) { await abortStaleUploads() }
        guard settings.existing == .check else { return [:] }
        let folders = existing.unlisted(items.filter(\.outcomeUnknown).map(\.remoteName))
        for folder in folders.sorted() {
            do {
                let (objects, _) = try await S3Listing(client: client).objects(prefix: folder, delimiter: "/")
                existing.record(folder: folder, objects: objects)
            } catch {
                logger.debug("existing: check: cannot list \(settings.display(key: folder)); its files are checked one by one",
                             metadata: ["error": "\(error)"])
            }
        }
        return [:]
    }

    /// Aborts the multipart uploads under the prefix left without progress for more than `abort_incomplete_after`
    /// (one ListMultipartUploads, paged): this destination's own by the time its ledger record was last written, any
    /// other client's by its start, as a bucket lifecycle rule `AbortIncompleteMultipartUpload` would. At most once an hour, before a batch with a file
    /// large enough for multipart; a failure is logged and changes nothing else.
    func abortStaleUploads(now: Date = Date()) async {
        guard let limit = settings.abortIncompleteAfter, resumeStore.persists else { return }
        let due = staleCheckedAt.withLock { checkedAt -> Bool in
            if let last = checkedAt, now.timeIntervalSince(last) < 3600 { return false }
            checkedAt = now
            return true
        }
        guard due else { return }
        let cutoff = now.addingTimeInterval(-limit.seconds)
        // An upload this destination recorded is judged by its last progress, not its start: a large file on a slow
        // link may take longer than the limit in all, and some servers answer a made-up Initiated (moto's is fixed).
        var ours: [String: (uploadID: String, updatedAt: Date)] = [:]
        for entry in resumeStore.recorded() {
            if let upload = entry.upload { ours[entry.key] = (upload.uploadID, entry.updatedAt) }
            if entry.upload == nil && entry.updatedAt < cutoff { resumeStore.forget(entry.key) }
        }
        do {
            let uploads = try await S3Listing(client: client).multipartUploads(prefix: settings.prefix)
            let listed = Set(uploads.map(\.uploadID))
            for (key, own) in ours where !listed.contains(own.uploadID) && own.updatedAt < cutoff { resumeStore.forget(key) }
            for upload in uploads {
                let isOurs = ours[upload.key]?.uploadID == upload.uploadID
                let lastProgress = isOurs ? ours[upload.key]!.updatedAt : upload.initiated
                guard lastProgress < cutoff else { continue }
                if await S3MultipartUpload.abort(client: client, key: upload.key, uploadID: upload.uploadID) {
                    if isOurs { resumeStore.forget(upload.key) }
                    logger.info("aborted the multipart upload of \(settings.display(key: upload.key)): no progress since \(ReportJSON.time(lastProgress)), longer than abort_incomplete_after")
                }
            }
        } catch {
            logger.info("cannot list the bucket's unfinished multipart uploads (\(DeliveryLayer.describe(error))); none aborted this time")
        }
    }

    /// A new pass: what was listed may have changed since.
    public func startPass() async {
        existing.reset()
    }

    /// An object a listing named: it counts when its size is the file's and its ETag is the one these bytes make
    /// (their MD5, or the multipart ETag of their parts at this plugin's part size). Listings show no
    /// encryption: an ETag that matches nothing (SSE-KMS) means "send it".
    func listedCopy(_ object: S3Listing.Object, of item: UploadItem) throws -> Receipt? {
        guard object.size == item.size, let etag = object.etag, try self.etag(etag, isTheOneOf: item) else { return nil }
        return Receipt(remoteName: item.remoteName, etag: etag.value, detail: settings.display(key: item.remoteName), sha256: item.sha256)
    }

    /// The object's SHA-256 as the server computed it over the whole object (`x-amz-checksum-sha256`, base64, asked
    /// for with `x-amz-checksum-mode: ENABLED`), in hex; nil when absent or composite (a checksum of part checksums).
    static func fullObjectSHA256(_ headers: HTTPHeaders) -> String? {
        guard let value = headers.first(name: "x-amz-checksum-sha256"), !value.contains("-"),
            headers.first(name: "x-amz-checksum-type")?.uppercased() != "COMPOSITE",
            let bytes = Data(base64Encoded: value), bytes.count == 32
        else { return nil }
        return SigV4Signer.hex(Array(bytes))
    }

    /// True when the object is encrypted in a way that makes its ETag something other than an MD5 of its bytes
    /// (SSE-KMS, DSSE-KMS, SSE-C).
    static func etagIsNotMD5(_ headers: HTTPHeaders) -> Bool {
        let encryption = headers.first(name: "x-amz-server-side-encryption")?.lowercased() ?? ""
        return encryption.hasPrefix("aws:kms") || headers.first(name: "x-amz-server-side-encryption-customer-algorithm") != nil
    }

    // MARK: List

    public func list() async throws -> RemoteListing {
        let listing = try await S3Listing(client: client).run()
        return RemoteListing(entries: listing.entries)
    }

    /// The listing with each object's ETag (`syncgate check` compares it with the one its receipt recorded: a copy
    /// replaced by other bytes of the same size has another ETag). The same ListObjectsV2 pages, no HEAD per object.
    public func verificationListing() async throws -> RemoteListing {
        let (objects, complete) = try await S3Listing(client: client).objects(prefix: settings.prefix)
        return RemoteListing(entries: objects.map { RemoteListing.Entry(name: $0.name, size: $0.size, checksum: $0.etag?.value, modified: $0.modified) },
                             isComplete: complete)
    }

    /// ``verificationListing()`` a ListObjectsV2 page at a time, in the byte order S3 lists keys in (directory buckets
    /// do not: the check then finds the order broken and compares in memory).
    public func verificationListing(beforeRequest: () async throws -> Void,
                                    page: ([RemoteListing.Entry]) async throws -> Void) async throws -> Bool {
        try await S3Listing(client: client).forEachPage(prefix: settings.prefix, beforeRequest: beforeRequest) { objects in
            try await page(objects.map { RemoteListing.Entry(name: $0.name, size: $0.size, checksum: $0.etag?.value) })
            return true
        }
    }

    public var verificationListingIsOrdered: Bool { true }

    /// The listing, stopped after `maxKeys` names (then `complete` is false), in pages of `pageSize`.
    func listObjects(maxKeys: Int?, pageSize: Int? = nil) async throws -> (entries: [RemoteListing.Entry], complete: Bool) {
        try await S3Listing(client: client).run(maxKeys: maxKeys, pageSize: pageSize)
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

    // MARK: Classification, probe and closing

    /// Every error this plugin throws is already classified: S3 answers by ``S3ErrorResponse/classification``,
    /// failures on the wire by ``S3TransportFailure``; cancellation and ``FileChangedError`` as the core says.
    public func classify(_ error: any Error) -> Classification {
        Classification.of(error)
    }

    /// One cheap bucket request: ListObjectsV2 for one name (without the prefix, which a policy may restrict; moto
    /// also refuses a signed query holding `/`). It throws what an upload would (credentials, bucket, region, clock,
    /// network); an AccessDenied answer is inconclusive (a key may be allowed to write and not to list), so the
    /// destination counts as available.
    public func probe() async throws {
        do {
            _ = try await client.send(
                .GET, key: nil, query: [("list-type", "2"), ("max-keys", "1")],
                context: "probe: ListObjectsV2 s3://\(settings.bucket)", maxResponseBytes: S3Listing.maximumPageBytes)
        } catch let error as DestinationError where error.scope == .file && (error.code == "AccessDenied" || error.code == "http-403") {
            logger.debug("probe: listing is not allowed; the destination counts as available", metadata: ["error": "\(error)"])
        }
    }

    /// A hex SHA-256 of the resolved credentials, endpoint and region (see ``S3Settings/fingerprint``).
    public var settingsFingerprint: String { settings.fingerprint }

    /// Aborts the multipart uploads still kept (for a next attempt that did not come, or cancelled), so no orphan
    /// parts are left, then closes the connections. Each abort is bounded by ``S3Settings/requestTimeout``, and
    /// they go out 8 at a time.
    public func finish() async {
        let kept = resumeStore.drain()
        let client = self.client
        await withTaskGroup(of: Void.self) { group in
            var next = 0
            func add() {
                let (key, uploadID) = kept[next]
                next += 1
                group.addTask { await S3MultipartUpload.abort(client: client, key: key, uploadID: uploadID) }
            }
            while next < min(8, kept.count) { add() }
            while await group.next() != nil {
                if next < kept.count { add() }
            }
        }
        await client.shutdown()
    }
}
