import Foundation
import SyncgateCore

/// Everything under a folder, read without following a link: each path's type and mode, a file's size, SHA-256 and
/// modification time, a link's target. Two equal snapshots taken before and after a run mean the run wrote, renamed
/// and deleted nothing there.
struct TreeSnapshot: Equatable, CustomStringConvertible {
    var entries: [String: String] = [:]

    init(_ root: String) throws {
        try add(root, as: ".")
    }

    private mutating func add(_ path: String, as relative: String) throws {
        var st = stat()
        guard lstat(path, &st) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let mode = String(st.st_mode & 0o7777, radix: 8)
        let modified = "\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
        switch st.st_mode & S_IFMT {
        case S_IFDIR:
            entries[relative] = "folder \(mode) \(modified)"
            for name in try FileManager.default.contentsOfDirectory(atPath: path) {
                try add(path + "/" + name, as: relative == "." ? name : relative + "/" + name)
            }
        case S_IFLNK:
            entries[relative] = "link -> " + (try FileManager.default.destinationOfSymbolicLink(atPath: path))
        case S_IFREG:
            entries[relative] = "file \(mode) \(st.st_size) \(try FileHasher.sha256(path: path)) \(modified)"
        default:
            entries[relative] = "other \(st.st_mode)"
        }
    }

    var description: String {
        entries.keys.sorted().map { "\($0): \(entries[$0]!)" }.joined(separator: "\n")
    }
}
