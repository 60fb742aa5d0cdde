/// A local folder whose files are delivered.
public struct SourceConfig: Sendable, Hashable {
    public var name: String
    /// Absolute path of the folder.
    public var path: String
    public var include: GlobSet
    public var exclude: GlobSet
    /// Follow symbolic links (to files and folders) inside the source. Off by default.
    public var followSymlinks: Bool

    public init(name: String, path: String, include: GlobSet, exclude: GlobSet, followSymlinks: Bool = false) {
        self.name = name
        self.path = path
        self.include = include
        self.exclude = exclude
        self.followSymlinks = followSymlinks
    }

    /// Whether a relative path is selected by include/exclude.
    public func selects(_ relativePath: String) -> Bool {
        include.matches(relativePath) && !(exclude.decision(for: relativePath) ?? false)
    }
}

struct RawSource: Decodable {
    var name: String
    var path: String
    var include: GlobSet?
    var exclude: GlobSet?
    var followSymlinks: Bool?

    enum CodingKeys: String, CodingKey {
        case name, path, include, exclude
        case followSymlinks = "follow_symlinks"
    }
}
