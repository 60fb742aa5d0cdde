#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SyncgateCore

/// Lists the files under the local destination's folder: regular files only, each folder opened relative to its
/// parent with `O_NOFOLLOW`, so a symbolic link (to a folder or a file, inside the tree or out of it, dangling) is
/// neither followed nor listed. Temporary files are left out; a subfolder that cannot be read is skipped.
enum LocalLister {
    static func entries(of tree: LocalTree) throws -> [RemoteListing.Entry] {
        guard let root = try tree.root(create: false) else { return [] }
        var entries: [RemoteListing.Entry] = []
        do {
            try walk(root, into: &entries)
        } catch {
            throw tree.failure(error.code, "cannot list \(tree.rootPath)", at: .root)
        }
        entries.sort { $0.name < $1.name }
        return entries
    }

    /// What stands for a copy's content in its receipt and in the listing (`syncgate check` compares the two): its
    /// modification time to the nanosecond, `mtime-<seconds>.<nanoseconds>`. A copy written again since it was
    /// delivered (by anything but syncgate) has another; `check --checksum` reads the bytes.
    static func tag(_ st: stat) -> String {
        "mtime-\(st.st_mtim.tv_sec)." + String(st.st_mtim.tv_nsec + 1_000_000_000).dropFirst()
    }

    /// Adds the files of `folder` and of its subfolders. Throws only when `folder` itself cannot be read.
    private static func walk(_ folder: LocalFolder, into entries: inout [RemoteListing.Entry]) throws(LocalFolder.ReadError) {
        for entry in try folder.entries() {
            if entry.name.hasPrefix(LocalDestination.temporaryPrefix) { continue }
            var type = entry.type
            var st = stat()
            if type == UInt8(DT_UNKNOWN) || type == UInt8(DT_REG) {
                guard fstatat(folder.descriptor, entry.name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
                switch st.st_mode & S_IFMT {
                case S_IFREG: type = UInt8(DT_REG)
                case S_IFDIR: type = UInt8(DT_DIR)
                default: continue
                }
            }
            if type == UInt8(DT_REG) {
                entries.append(RemoteListing.Entry(
                    name: folder.child(entry.name), size: Int64(st.st_size), checksum: tag(st),
                    modified: Date(timeIntervalSince1970: Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9)))
            } else if type == UInt8(DT_DIR) {
                let fd = openat(folder.descriptor, entry.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard fd >= 0 else { continue }  // unreadable, or replaced by a link since it was read
                try? walk(LocalFolder(descriptor: fd, path: folder.child(entry.name)), into: &entries)
            }
        }
    }
}
