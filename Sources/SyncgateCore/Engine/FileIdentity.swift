import Foundation

/// What tells one version of a file from another without reading it: device, inode, size, modification and
/// change times (`lstat`, so a symbolic link is itself).
struct FileIdentity: Equatable {
    var device: UInt64, inode: UInt64, size: Int64
    var modified: timespec, changed: timespec

    init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    /// The identity in a `stat` already taken (`fstat`, `fstatat` with `AT_SYMLINK_NOFOLLOW`).
    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = info.st_mtim
        changed = info.st_ctim
    }

    static func == (a: FileIdentity, b: FileIdentity) -> Bool {
        a.device == b.device && a.inode == b.inode && a.size == b.size
            && a.modified.tv_sec == b.modified.tv_sec && a.modified.tv_nsec == b.modified.tv_nsec
            && a.changed.tv_sec == b.changed.tv_sec && a.changed.tv_nsec == b.changed.tv_nsec
    }
}
