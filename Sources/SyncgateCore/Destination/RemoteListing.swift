import Foundation

/// What ``Destination/list()`` returns.
public struct RemoteListing: Sendable, Hashable {
    public struct Entry: Sendable, Hashable {
        public var name: String
        public var size: Int64?
        /// What the destination says of the copy's content without reading it (an S3 ETag, a local file's
        /// modification time), compared by `syncgate check` with the receipt's ``Receipt/etag`` from its upload.
        public var checksum: String?
        /// The SHA-256 (hex) of the copy's bytes, where the destination's listing gives it (an `exec` plugin's own),
        /// compared with the ledger's.
        public var sha256: String?
        /// When the copy was last written, where the listing says (a local file's modification time, an S3
        /// object's LastModified): what `syncgate ls -l` shows.
        public var modified: Date?
        public init(name: String, size: Int64? = nil, checksum: String? = nil, sha256: String? = nil, modified: Date? = nil) {
            self.name = name
            self.size = size
            self.checksum = checksum
            self.sha256 = sha256
            self.modified = modified
        }
    }

    public var entries: [Entry]
    /// Free space the destination reports, when it has such a notion (a head unit's quota).
    public var spaceAvailable: Int64?
    /// False when the destination may hold names the listing leaves out (SDL Core's ListFiles names at most 1,000
    /// files): a name missing from it proves nothing.
    public var isComplete: Bool

    public init(entries: [Entry], spaceAvailable: Int64? = nil, isComplete: Bool = true) {
        self.entries = entries
        self.spaceAvailable = spaceAvailable
        self.isComplete = isComplete
    }

    public var names: Set<String> { Set(entries.map(\.name)) }

    /// The names compared byte for byte (see ``ExactString``).
    public var exactNames: Set<ExactString> { Set(entries.map { ExactString($0.name) }) }
}
