#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A folder as it is on disk: its real path (`realpath`) and the device and inode of it and of each of its parents,
/// so that whether one folder lies in another is decided through links and bind mounts alike. A folder not made yet
/// (a destination before its first sync) is its nearest existing parent, resolved so, followed by the names still
/// to make.
struct FolderOnDisk {
    /// The real path, the names not made yet included.
    var path: String
    /// (device, inode, path) of the nearest existing folder, then of each parent up to `/`.
    var chain: [(device: UInt64, inode: UInt64, path: String)]
    /// The names below the nearest existing folder that do not exist yet (none when the folder exists).
    var missing: [String]

    /// Nil when the folder is not there (unless `mayBeMissing`), or when a path to it cannot be resolved.
    init?(_ absolute: String, mayBeMissing: Bool = false) {
        var existing = absolute
        var missing: [String] = []
        var resolved = realpath(existing, nil)
        while resolved == nil {
            guard mayBeMissing, errno == ENOENT, existing != "/" else { return nil }
            let name = (existing as NSString).lastPathComponent
            // A name still to make: ".." or "." there cannot be followed on disk, so the folder is not placed.
            guard !name.isEmpty, name != ".", name != ".." else { return nil }
            missing.insert(name, at: 0)
            existing = (existing as NSString).deletingLastPathComponent
            if existing.isEmpty { existing = "/" }
            resolved = realpath(existing, nil)
        }
        let real = String(cString: resolved!)
        free(resolved)
        chain = []
        var current = real
        while true {
            var info = stat()
            guard stat(current, &info) == 0 else { return nil }
            if current == real && (info.st_mode & S_IFMT) != S_IFDIR { return nil }
            chain.append((UInt64(info.st_dev), UInt64(info.st_ino), current))
            if current == "/" { break }
            current = (current as NSString).deletingLastPathComponent
            if current.isEmpty { current = "/" }
        }
        self.missing = missing
        path = missing.reduce(real) { $0 == "/" ? "/" + $1 : $0 + "/" + $1 }
    }

    /// The relative path of this folder inside `other` ("" for the same folder); nil when it is not in it (or when
    /// `other` does not exist yet: it holds nothing).
    func offset(below other: FolderOnDisk) -> String? {
        guard other.missing.isEmpty, let top = other.chain.first,
              let match = chain.first(where: { $0.device == top.device && $0.inode == top.inode })
        else { return nil }
        if match.path == path { return "" }
        let prefix = match.path == "/" ? "/" : match.path + "/"
        return String(path.dropFirst(prefix.count))
    }
}
