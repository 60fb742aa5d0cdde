import SyncgateCore

/// The keys of a `type: local` destination.
struct LocalConfig: Decodable {
    /// Folder the files are written under (relative paths resolve against the config file's folder).
    var path: String
    /// How copies are made durable (``LocalFsync``).
    var fsync: LocalFsync

    enum CodingKeys: String, CodingKey { case path, fsync }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        path = try c.decode(String.self, forKey: .path)
        if let text = try c.decodeIfPresent(String.self, forKey: .fsync) {
            guard let mode = LocalFsync(configValue: text) else {
                throw ConfigValueError("must be batch, file (or true) or false", key: CodingKeys.fsync)
            }
            fsync = mode
        } else {
            fsync = .batch
        }
        if path.isEmpty { throw ConfigValueError("must not be empty", key: CodingKeys.path) }
    }
}
