import Foundation
import SyncgateCore

/// What every object this destination stores carries besides its bytes: a `Content-Type` from the file's extension
/// (`content_types:` overrides or adds extensions), `cache_control`, server-side encryption (`sse: AES256` or
/// `aws:kms` with an optional `sse_kms_key_id`), `tags` and a canned `acl`. Each becomes the request header S3
/// documents for PutObject and CreateMultipartUpload.
public struct S3ObjectSettings: Sendable, Hashable {
    /// Extension (lowercased, without the dot) to media type, over ``S3ContentType/builtIn``.
    public var contentTypes: [String: String] = [:]
    public var cacheControl: String?
    public var sse: Encryption?
    public var sseKMSKeyID: String?
    /// Sorted by key, so that the header (and the settings' fingerprint) does not depend on the YAML's order.
    public var tags: [(key: String, value: String)] = []
    public var acl: String?

    public enum Encryption: String, Sendable, Hashable, CaseIterable {
        case aes256 = "AES256"
        case kms = "aws:kms"
    }

    /// The canned ACLs S3 documents.
    public static let cannedACLs = [
        "private", "public-read", "public-read-write", "authenticated-read", "aws-exec-read", "bucket-owner-read",
        "bucket-owner-full-control",
    ]

    public init() {}

    enum CodingKeys: String, CodingKey {
        case contentTypes = "content_types"
        case cacheControl = "cache_control"
        case sse
        case sseKMSKeyID = "sse_kms_key_id"
        case tags, acl
    }

    /// Reads its keys from the destination's mapping (they sit beside `bucket` and `prefix`).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let map = try c.decodeIfPresent([String: String].self, forKey: .contentTypes) {
            for (name, type) in map {
                let ext = name.hasPrefix(".") ? String(name.dropFirst()) : name
                guard !ext.isEmpty, !ext.contains("/"), !ext.contains(where: \.isWhitespace) else {
                    throw ConfigValueError("'\(name)' is not a file extension (e.g. .log or log)", key: CodingKeys.contentTypes)
                }
                guard S3ObjectSettings.isMediaType(type) else {
                    throw ConfigValueError("'\(type)' for '\(name)' is not a media type (type/subtype, e.g. text/plain)", key: CodingKeys.contentTypes)
                }
                contentTypes[ext.lowercased()] = type
            }
        }
        cacheControl = try c.decodeIfPresent(String.self, forKey: .cacheControl)
        if let cacheControl, cacheControl.isEmpty || !S3ObjectSettings.isHeaderValue(cacheControl) {
            throw ConfigValueError("must be a header value on one line (e.g. max-age=3600)", key: CodingKeys.cacheControl)
        }
        if let text = try c.decodeIfPresent(String.self, forKey: .sse) {
            guard let value = Encryption(rawValue: text) else {
                throw ConfigValueError("'\(text)' is not AES256 or aws:kms", key: CodingKeys.sse)
            }
            sse = value
        }
        sseKMSKeyID = try c.decodeIfPresent(String.self, forKey: .sseKMSKeyID)
        if let id = sseKMSKeyID {
            guard sse == .kms else { throw ConfigValueError("goes with sse: aws:kms", key: CodingKeys.sseKMSKeyID) }
            guard !id.isEmpty, S3ObjectSettings.isHeaderValue(id), !id.contains(" ") else {
                throw ConfigValueError("must be a KMS key id or ARN", key: CodingKeys.sseKMSKeyID)
            }
        }
        if let map = try c.decodeIfPresent([String: String].self, forKey: .tags) {
            guard map.count <= 10 else { throw ConfigValueError("S3 allows at most 10 tags on an object (\(map.count) given)", key: CodingKeys.tags) }
            for (key, value) in map {
                guard !key.isEmpty, key.count <= 128, value.count <= 256 else {
                    throw ConfigValueError("tag '\(key)': keys are 1-128 characters and values at most 256", key: CodingKeys.tags)
                }
            }
            tags = map.sorted { $0.key < $1.key }.map { (key: $0.key, value: $0.value) }
        }
        acl = try c.decodeIfPresent(String.self, forKey: .acl)
        if let acl, !S3ObjectSettings.cannedACLs.contains(acl) {
            throw ConfigValueError("'\(acl)' is not a canned ACL (\(S3ObjectSettings.cannedACLs.joined(separator: ", ")))", key: CodingKeys.acl)
        }
    }

    /// The media type of an object named `key`: the configured one for its extension, else the built-in one, else
    /// `application/octet-stream`.
    public func contentType(forKey key: String) -> String {
        let name = key.split(separator: "/").last.map(String.init) ?? key
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return S3ContentType.fallback }
        let ext = name[name.index(after: dot)...].lowercased()
        return contentTypes[ext] ?? S3ContentType.builtIn[ext] ?? S3ContentType.fallback
    }

    /// The headers a PutObject or CreateMultipartUpload of `key` carries for these settings.
    public func headers(forKey key: String) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [("Content-Type", contentType(forKey: key))]
        if let cacheControl { headers.append(("Cache-Control", cacheControl)) }
        if let sse { headers.append(("x-amz-server-side-encryption", sse.rawValue)) }
        if let sseKMSKeyID { headers.append(("x-amz-server-side-encryption-aws-kms-key-id", sseKMSKeyID)) }
        if !tags.isEmpty {
            // The tag set as a URL query (S3's x-amz-tagging): unreserved characters kept, the rest %XX (a space %20,
            // which S3 takes as well as "+"), which is SigV4's own encoding.
            let text = tags.map { S3URIEncoding.encode($0.key) + "=" + S3URIEncoding.encode($0.value) }.joined(separator: "&")
            headers.append(("x-amz-tagging", text))
        }
        if let acl { headers.append(("x-amz-acl", acl)) }
        return headers
    }

    /// Every setting as one text (for equality: the tags are an ordered list of pairs).
    var identity: String {
        [contentTypes.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ","), cacheControl ?? "",
         sse?.rawValue ?? "", sseKMSKeyID ?? "", tags.map { "\($0.key)=\($0.value)" }.joined(separator: ","), acl ?? ""].joined(separator: "\n")
    }

    public static func == (a: S3ObjectSettings, b: S3ObjectSettings) -> Bool { a.identity == b.identity }
    public func hash(into hasher: inout Hasher) { hasher.combine(identity) }

    static func isMediaType(_ text: String) -> Bool {
        let parts = text.split(separator: "/", maxSplits: 1)
        return parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty && isHeaderValue(text) && !parts[0].contains(" ")
    }

    /// Printable ASCII on one line: nothing that could end a header or smuggle another.
    static func isHeaderValue(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F }
    }
}
