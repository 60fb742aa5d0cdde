import Foundation

/// A source's root folder as a complete walk found it: its identity (the device and inode of the configured path,
/// links followed, so that a switched link or an unmounted mount point shows as another folder) and how many files
/// the walk found. A mirror judges the next walks against it before deleting anything (see ``SourceJudge``).
public struct SourceRoot: Sendable, Hashable {
    public var source: String
    public var device: String
    public var inode: String
    public var files: Int
    public var walkedAt: Date

    public init(source: String, device: String, inode: String, files: Int, walkedAt: Date) {
        self.source = source
        self.device = device
        self.inode = inode
        self.files = files
        self.walkedAt = walkedAt
    }

    /// The identity of the folder at `path` now (links followed), or nil when it is not a folder.
    public static func identity(of path: String) -> (device: String, inode: String)? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { return nil }
        return (String(info.st_dev), String(info.st_ino))
    }
}
