import SyncgateCore

/// `multipart: { threshold, part_size, concurrency }`: files of `threshold` bytes or more are sent as a
/// multipart upload of `part_size` parts, `concurrency` parts at a time.
public struct S3MultipartConfig: Decodable, Sendable, Hashable {
    public static let minimumPartSize: Int64 = 5 << 20
    public static let maximumPartSize: Int64 = 5 << 30
    public static let maximumParts: Int64 = 10_000

    public var threshold: Int64 = 16 << 20
    public var partSize: Int64 = 8 << 20
    public var concurrency: Int = 4

    enum CodingKeys: String, CodingKey {
        case threshold
        case partSize = "part_size"
        case concurrency
    }

    public init() {}

    public init(threshold: Int64, partSize: Int64, concurrency: Int) {
        self.threshold = threshold
        self.partSize = partSize
        self.concurrency = concurrency
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let value = try c.decodeIfPresent(ByteSize.self, forKey: .threshold) {
            guard value.bytes >= Self.minimumPartSize, value.bytes <= Self.maximumPartSize else {
                throw ConfigValueError("must be between 5MiB and 5GiB (a single PUT holds at most 5GiB)", key: CodingKeys.threshold)
            }
            threshold = value.bytes
        }
        if let value = try c.decodeIfPresent(ByteSize.self, forKey: .partSize) {
            guard value.bytes >= Self.minimumPartSize else {
                throw ConfigValueError("must be >= 5MiB (S3's smallest part)", key: CodingKeys.partSize)
            }
            guard value.bytes <= Self.maximumPartSize else {
                throw ConfigValueError("must be <= 5GiB (S3's largest part)", key: CodingKeys.partSize)
            }
            partSize = value.bytes
        }
        if let value = try c.decodeIfPresent(Int.self, forKey: .concurrency) {
            guard (1...64).contains(value) else {
                throw ConfigValueError("must be between 1 and 64", key: CodingKeys.concurrency)
            }
            concurrency = value
        }
    }

    /// The part size used for a file of `size` bytes: `partSize`, grown when the file would need more than
    /// 10,000 parts.
    public func effectivePartSize(for size: Int64) -> Int64 {
        let needed = (size + Self.maximumParts - 1) / Self.maximumParts
        return max(partSize, needed)
    }
}
