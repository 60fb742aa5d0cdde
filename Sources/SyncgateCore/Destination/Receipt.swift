import Foundation

/// What a destination answered for a delivered file: stored in the ledger, shown by `status`.
public struct Receipt: Sendable, Hashable, Codable {
    /// The name the destination holds the file under.
    public var remoteName: String
    /// An entity tag or content checksum the destination reported (S3 ETag, ...).
    public var etag: String?
    /// Destination-specific detail (a row range, a space-available figure, ...). Never a secret.
    public var detail: String?
    /// SHA-256 of the delivered content (filled in by the delivery layer).
    public var sha256: String?

    public init(remoteName: String, etag: String? = nil, detail: String? = nil, sha256: String? = nil) {
        self.remoteName = remoteName
        self.etag = etag
        self.detail = detail
        self.sha256 = sha256
    }
}
