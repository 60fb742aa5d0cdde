import Crypto
import Foundation
import SyncgateCore

/// ListObjectsV2 under the destination's prefix, following continuation tokens, bounded against a server that
/// never stops: at most ``maximumEntries`` names and ``maximumPages`` pages (``maximumEmptyPages`` of them in a row
/// without a name), each page's answer at most ``maximumPageBytes``, and a continuation token never seen before and at
/// most ``maximumTokenBytes`` long. (Page order is not checked: S3 directory buckets do not list in byte order.)
/// Breaking a bound is an error naming it; nothing is held but the names read so far.
struct S3Listing: Sendable {
    /// 400,000 names cost `syncgate ls` about 100 MiB; four times the files the README's benchmarks deliver.
    static let maximumEntries = 400_000
    static let maximumNameBytes = 48 << 20
    static let maximumPages = 20_000
    static let maximumEmptyPages = 100
    static let maximumPageBytes = 8 << 20
    static let maximumTokenBytes = 16 << 10

    let client: S3Client
    /// The bounds of this listing (the static ones unless a test lowers them).
    var maximumEntriesHere = S3Listing.maximumEntries
    var maximumNameBytesHere = S3Listing.maximumNameBytes
    var settings: S3Settings { client.settings }

    /// One object as a listing names it.
    struct Object: Sendable, Hashable {
        var name: String
        var size: Int64?
        var etag: S3ETag?
        var modified: Date?
    }

    /// The listing; stops after `maxKeys` names (then `complete` is false). `pageSize` asks for smaller pages.
    func run(maxKeys: Int? = nil, pageSize: Int? = nil) async throws -> (entries: [RemoteListing.Entry], complete: Bool) {
        let (objects, complete) = try await objects(prefix: settings.prefix, withETags: false, maxKeys: maxKeys, pageSize: pageSize)
        return (objects.map { RemoteListing.Entry(name: $0.name, size: $0.size, modified: $0.modified) }, complete)
    }

    /// The objects under `prefix` (with `delimiter` "/", those directly in that folder), with their sizes and
    /// ETags (unless `withETags` is false: a listing of 400,000 names is held in memory); stops after `maxKeys`
    /// names (then `complete` is false).
    func objects(prefix: String, delimiter: String? = nil, withETags: Bool = true, maxKeys: Int? = nil, pageSize: Int? = nil) async throws -> (objects: [Object], complete: Bool) {
        let context = "ListObjectsV2 s3://\(settings.bucket)/\(prefix)"
        var entries: [Object] = []
        var nameBytes = 0
        let complete = try await forEachPage(prefix: prefix, delimiter: delimiter, withETags: withETags, pageSize: pageSize) { page in
            for object in page {
                nameBytes += object.name.utf8.count
                entries.append(object)
                guard entries.count <= maximumEntriesHere, nameBytes <= maximumNameBytesHere else {
                    throw failure(
                        context, "more than \(maximumEntriesHere) names (or \(maximumNameBytesHere >> 20) MiB of them) under the prefix; listing stopped",
                        code: "ListingTooLong")
                }
            }
            if let maxKeys, entries.count >= maxKeys { return false }
            return true
        }
        return (entries, complete)
    }

    /// The objects under `prefix`, handed to `body` a page at a time as the server sends them (nothing is held
    /// between pages): what `syncgate check` merges with the ledger. `beforeRequest` is awaited before each request
    /// (the destination's `rate`). `body` returns false to stop. Returns whether the listing went to its end.
    func forEachPage(prefix: String, delimiter: String? = nil, withETags: Bool = true, pageSize: Int? = nil,
                     beforeRequest: () async throws -> Void = {}, _ body: ([Object]) async throws -> Bool) async throws -> Bool {
        let context = "ListObjectsV2 s3://\(settings.bucket)/\(prefix)"
        var token: String?
        var seenTokens: Set<String> = []
        var pages = 0
        var emptyInARow = 0
        repeat {
            try Task.checkCancellation()
            pages += 1
            guard pages <= S3Listing.maximumPages else {
                throw failure(context, "the server is still paginating after \(S3Listing.maximumPages) pages", code: "ListingTooLong")
            }
            var query: [(name: String, value: String)] = [("list-type", "2"), ("encoding-type", "url")]
            if !prefix.isEmpty { query.append(("prefix", prefix)) }
            if let delimiter { query.append(("delimiter", delimiter)) }
            if let token { query.append(("continuation-token", token)) }
            if let pageSize { query.append(("max-keys", String(pageSize))) }
            try await beforeRequest()
            let response = try await client.send(.GET, key: nil, query: query, context: context, maxResponseBytes: S3Listing.maximumPageBytes)
            guard let root = S3XMLElement.parse(response.body), root.name == "ListBucketResult" else {
                throw DestinationError.retryable("\(context): the answer is not a ListBucketResult", code: "MalformedXML")
            }
            let encoded = root.value("EncodingType") == "url"
            var page: [Object] = []
            for content in root.all("Contents") {
                guard let raw = content.value("Key") else { continue }
                let name = encoded ? S3URIEncoding.decode(raw, plusIsSpace: true) : raw
                page.append(Object(name: name, size: content.value("Size").flatMap { Int64($0) }, etag: withETags ? content.value("ETag").map { S3ETag($0) } : nil,
                                   modified: content.value("LastModified").flatMap(S3Time.parse)))
            }
            emptyInARow = page.isEmpty ? emptyInARow + 1 : 0
            let truncated = root.value("IsTruncated") == "true"
            token = truncated ? root.value("NextContinuationToken") : nil
            if truncated {
                guard let next = token, !next.isEmpty else {
                    throw DestinationError.retryable("\(context): truncated answer without a continuation token", code: "MalformedXML")
                }
                guard next.utf8.count <= S3Listing.maximumTokenBytes else {
                    throw failure(context, "a continuation token of \(next.utf8.count) bytes", code: "MalformedXML")
                }
                guard seenTokens.insert(S3Listing.digest(next)).inserted else {
                    throw failure(context, "the server sent continuation token \(next.prefix(40)) a second time: the listing is going round", code: "ListingLoop")
                }
                guard emptyInARow < S3Listing.maximumEmptyPages else {
                    throw failure(context, "\(emptyInARow) pages in a row without a name, and still truncated", code: "ListingLoop")
                }
            }
            if try await !body(page), token != nil { return false }
        } while token != nil
        return true
    }

    /// A multipart upload not yet completed or aborted, as ListMultipartUploads names it.
    struct Upload: Sendable {
        var key: String
        var uploadID: String
        var initiated: Date
    }

    /// The unfinished multipart uploads under `prefix` (ListMultipartUploads, following its markers), bounded as the
    /// object listing is: at most ``maximumPages`` pages and ``maximumEntries`` uploads, markers that move on.
    func multipartUploads(prefix: String) async throws -> [Upload] {
        let context = "ListMultipartUploads s3://\(settings.bucket)/\(prefix)"
        var uploads: [Upload] = []
        var markers: (key: String, uploadID: String)? = nil
        var seen: Set<String> = []
        for _ in 0..<S3Listing.maximumPages {
            try Task.checkCancellation()
            var query: [(name: String, value: String)] = [("uploads", ""), ("encoding-type", "url")]
            if !prefix.isEmpty { query.append(("prefix", prefix)) }
            if let markers {
                query.append(("key-marker", markers.key))
                query.append(("upload-id-marker", markers.uploadID))
            }
            let response = try await client.send(.GET, key: nil, query: query, context: context, maxResponseBytes: S3Listing.maximumPageBytes)
            guard let root = S3XMLElement.parse(response.body), root.name == "ListMultipartUploadsResult" else {
                throw DestinationError.retryable("\(context): the answer is not a ListMultipartUploadsResult", code: "MalformedXML")
            }
            let encoded = root.value("EncodingType") == "url"
            for upload in root.all("Upload") {
                guard let raw = upload.value("Key"), let id = upload.value("UploadId"),
                      let initiated = upload.value("Initiated").flatMap(S3Time.parse) else { continue }
                uploads.append(Upload(key: encoded ? S3URIEncoding.decode(raw, plusIsSpace: true) : raw, uploadID: id, initiated: initiated))
                guard uploads.count <= maximumEntriesHere else {
                    throw failure(context, "more than \(maximumEntriesHere) unfinished uploads", code: "ListingTooLong")
                }
            }
            guard root.value("IsTruncated") == "true" else { return uploads }
            guard let key = root.value("NextKeyMarker"), let id = root.value("NextUploadIdMarker"), !key.isEmpty || !id.isEmpty,
                  seen.insert(key + "\u{0}" + id).inserted
            else {
                throw failure(context, "a truncated answer whose markers do not move on", code: "ListingLoop")
            }
            markers = (encoded ? S3URIEncoding.decode(key, plusIsSpace: true) : key, id)
        }
        throw failure(context, "the server is still paginating after \(S3Listing.maximumPages) pages", code: "ListingTooLong")
    }

    private func failure(_ context: String, _ text: String, code: String) -> DestinationError {
        DestinationError.retryable(Redactor.shared.redact("\(context): \(text)"), code: code)
    }

    private static func digest(_ token: String) -> String {
        SigV4Signer.hex(Array(SHA256.hash(data: Array(token.utf8))))
    }
}
