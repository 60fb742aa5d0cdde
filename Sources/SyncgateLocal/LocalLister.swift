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
    /// Every file under the folder, in the byte order of their names (``forEachPage(of:pageSize:_:)``, held whole).
    static func entries(of tree: LocalTree) async throws -> [RemoteListing.Entry] {
        var entries: [RemoteListing.Entry] = []
        try await forEachPage(of: tree) { entries += $0 }
        return entries
    }

    /// The files under the folder in the byte order of their names, handed to `body` in pages of `pageSize` as
    /// the walk goes (`syncgate check` merges them with the ledger): each folder's entries are sorted with a
    /// subfolder's name followed by `/`, so that `a-b` comes before `a/x`. What is held is the entries of the folders
    /// being walked, never the whole tree.
    static func forEachPage(of tree: LocalTree, pageSize: Int = 1_000, _ body: ([RemoteListing.Entry]) async throws -> Void) async throws {
        guard let root = try tree.root(create: false) else { return }
        var page: [RemoteListing.Entry] = []
        page.reserveCapacity(pageSize)
        do {
            try await walkInOrder(root, page: &page, pageSize: pageSize, body)
        } catch let error as LocalFolder.ReadError {
            throw tree.failure(error.code, "cannot list \(tree.rootPath)", at: .root)
        }
        if !page.isEmpty { try await body(page) }
    }

    /// Adds the files of `folder` and of its subfolders to `page` in byte order, handing each full page to `body`.
    private static func walkInOrder(_ folder: LocalFolder, page: inout [RemoteListing.Entry], pageSize: Int,
                                    _ body: ([RemoteListing.Entry]) async throws -> Void) async throws {
        var children: [(key: String, entry: RemoteListing.Entry?)] = []
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
                children.append((entry.name, RemoteListing.Entry(
                    name: folder.child(entry.name), size: Int64(st.st_size), checksum: tag(st),
                    modified: Date(timeIntervalSince1970: Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9))))
            } else if type == UInt8(DT_DIR) {
                children.append((entry.name + "/", nil))
            }
        }
        children.sort { ExactString.compare($0.key, $1.key) < 0 }
        for child in children {
            try Task.checkCancellation()
            if let entry = child.entry {
                page.append(entry)
                if page.count >= pageSize {
                    try await body(page)
                    page.removeAll(keepingCapacity: true)
                }
                continue
            }
            let name = String(child.key.dropLast())
            let fd = openat(folder.descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }  // unreadable, or replaced by a link since it was read
            do {
                try await walkInOrder(LocalFolder(descriptor: fd, path: folder.child(name)), page: &page, pageSize: pageSize, body)
            } catch is LocalFolder.ReadError {
                continue  // a subfolder that cannot be read is skipped
            }
        }
    }

    /// What stands for a copy's content in its receipt and in the listing (`syncgate check` compares the two): its
    /// modification time to the nanosecond, `mtime-<seconds>.<nanoseconds>`. A copy written again since it was
    /// delivered (by anything but syncgate) has another; `check --checksum` reads the bytes.
    static func tag(_ st: stat) -> String {
        "mtime-\(st.st_mtim.tv_sec)." + String(st.st_mtim.tv_nsec + 1_000_000_000).dropFirst()
    }
}
