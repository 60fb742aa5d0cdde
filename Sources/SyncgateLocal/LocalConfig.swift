import SyncgateCore

/// The keys of a `type: local` destination.
struct LocalConfig: Decodable {
    /// Folder the files are written under (relative paths resolve against the config file's folder).
    var path: String
    /// Call fsync on each file and its folder before the rename (on by default: a crash never leaves half a file
    /// under its final name, and a synced file survives a power cut).
    var fsync: Bool

    enum CodingKeys: String, CodingKey { case path, fsync }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        path = try c.decode(String.self, forKey: .path)
        fsync = try c.decodeIfPresent(Bool.self, forKey: .fsync) ?? true
        if path.isEmpty { throw ConfigValueError("must not be empty", key: CodingKeys.path) }
    }
}
