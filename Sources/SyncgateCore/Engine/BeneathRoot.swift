import Foundation

/// A file below a source's folder, reached from the folder's open descriptor one name at a time with
/// `O_NOFOLLOW`: a symbolic link anywhere on the way (a folder swapped for a link to somewhere else) is found, never
/// followed. What a move reads and unlinks is thus the file inside the source, or nothing. The folder itself
/// (`path` in the config) may be a link: it is opened as the config names it.
struct BeneathRoot {
    /// The source's folder.
    let root: String

    /// The folder holding a file's last name, opened; or why it could not be.
    enum Parent {
        /// The open folder (the caller closes it) and the file's name in it.
        case folder(fd: Int32, name: String)
        /// A symbolic link (or a non-folder) on the way: the part of the path reached.
        case link(String)
        /// A folder on the way is gone.
        case missing
        case failed(Int32)
    }

    /// Opens the folder of `relativePath` (names separated by `/`, none empty, `.` or `..`).
    func openParent(_ relativePath: String) -> Parent {
        let parts = relativePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard let name = parts.last, !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else { return .failed(EINVAL) }
        var fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return errno == ENOENT ? .missing : .failed(errno) }
        var reached = ""
        for part in parts.dropLast() {
            reached += (reached.isEmpty ? "" : "/") + part
            let next = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            let code = errno
            close(fd)
            guard next >= 0 else {
                switch code {
                case ELOOP, ENOTDIR: return .link(reached)
                case ENOENT: return .missing
                default: return .failed(code)
                }
            }
            fd = next
        }
        return .folder(fd: fd, name: name)
    }

    /// A regular file opened for reading without following a link, and its `fstat`.
    enum Opened {
        case file(FileReader, stat)
        case link(String)
        case unavailable
    }

    func openFile(_ relativePath: String) -> Opened {
        switch openParent(relativePath) {
        case .link(let reached): return .link(reached)
        case .missing, .failed: return .unavailable
        case .folder(let dirfd, let name):
            defer { close(dirfd) }
            // O_NONBLOCK: a FIFO put in the file's place does not hold the open up.
            let fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { return errno == ELOOP ? .link(relativePath) : .unavailable }
            let reader = FileReader(adopting: fd, path: root + "/" + relativePath)
            guard let info = reader.status(), info.st_mode & S_IFMT == S_IFREG else { return .unavailable }
            return .file(reader, info)
        }
    }
}
