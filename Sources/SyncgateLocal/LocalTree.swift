#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization
import SyncgateCore

/// The local destination's folder and the folders under it, held open.
///
/// The destination folder (the root) is looked up by its path once, following links in that path (a `path:` that
/// is a link to a mounted disk is legitimate), and held open until ``close()``. Every folder below it is opened
/// relative to its parent's descriptor, one name at a time, with `O_NOFOLLOW`, so that nothing this destination
/// writes, renames or deletes is ever reached through a symbolic link: a link met where a folder should be is
/// reported (``linkError(_:in:)``), never followed, and never replaced. Opened folders are cached by their relative
/// path, so that a file's folder is found with one dictionary look-up instead of a walk of its path.
final class LocalTree: Sendable {
    /// The destination folder as configured.
    let rootPath: String
    private let state = Mutex(State())

    private struct State {
        var root: LocalFolder?
        var folders: [String: LocalFolder] = [:]
    }

    /// The most folders kept open at once (the cache is emptied when it is full; folders in use stay open).
    static let cacheLimit = 256

    init(rootPath: String) {
        self.rootPath = rootPath
    }

    /// The path shown in messages for `relative`, a path under the destination folder.
    func display(_ relative: String) -> String {
        if relative.isEmpty { return rootPath }
        return rootPath.hasSuffix("/") ? rootPath + relative : rootPath + "/" + relative
    }

    /// Lets every folder go (those in use close when their user is done): the next use looks the root up again.
    func close() {
        state.withLock { state in
            state.root = nil
            state.folders = [:]
        }
    }

    /// Forgets the folders below the root (one of them was removed, or replaced, while this run used it).
    func forgetFolders() {
        state.withLock { $0.folders = [:] }
    }

    /// Removes the folder at `relative` and then each parent below the root, as long as they are empty (after a
    /// delete, as `rsync --delete` does); stops at the first that is not. Forgets the open folders when one went.
    func removeEmptyFolders(_ relative: String) {
        var path = relative
        var removed = false
        while !path.isEmpty {
            let (parentPath, name) = path.lastIndex(of: "/").map { (String(path[..<$0]), String(path[path.index(after: $0)...])) } ?? ("", path)
            guard let parent = try? folder(parentPath, create: false), unlinkat(parent.descriptor, name, AT_REMOVEDIR) == 0 else { break }
            removed = true
            path = parentPath
        }
        if removed { forgetFolders() }
    }

    // MARK: - Finding folders

    /// The destination folder, opened (and made, with its missing parents, when `create`) at its first use. nil when
    /// it does not exist and `create` is false.
    func root(create: Bool) throws -> LocalFolder? {
        if let root = state.withLock({ $0.root }) { return root }
        var fd = open(rootPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0 && errno == ENOENT {
            guard create else { return nil }
            let code = LocalTree.makeFolders(rootPath)
            guard code == 0 else { throw LocalErrno.error(code, "cannot create the destination folder \(rootPath)", at: .root) }
            fd = open(rootPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        guard fd >= 0 else { throw LocalErrno.error(errno, "cannot open the destination folder \(rootPath)", at: .root) }
        let opened = LocalFolder(descriptor: fd, path: "")
        return state.withLock { state in
            if let root = state.root { return root }
            state.root = opened
            return opened
        }
    }

    /// The folder at `relative` ("" for the root), opened name by name from the nearest folder already open,
    /// never through a link; missing folders are made when `create`, otherwise the answer is nil.
    func folder(_ relative: String, create: Bool) throws -> LocalFolder? {
        if relative.isEmpty { return try root(create: create) }
        if let open = state.withLock({ $0.folders[relative] }) { return open }
        let names = relative.split(separator: "/", omittingEmptySubsequences: false)
        // The nearest ancestor already open.
        var start = names.count - 1
        var parent: LocalFolder? = nil
        while start > 0 {
            let prefix = names[0..<start].joined(separator: "/")
            if let open = state.withLock({ $0.folders[prefix] }) {
                parent = open
                break
            }
            start -= 1
        }
        if parent == nil {
            guard let root = try root(create: create) else { return nil }
            parent = root
        }
        var folder = parent!
        for name in names[start...] {
            guard let child = try openFolder(String(name), in: folder, create: create) else { return nil }
            state.withLock { state in
                if state.folders.count >= LocalTree.cacheLimit { state.folders = [:] }
                state.folders[child.path] = child
            }
            folder = child
        }
        return folder
    }

    /// Opens the folder `name` in `parent` without following a link (and makes it first when it is missing and
    /// `create`); nil when it is missing and not to be made.
    private func openFolder(_ name: String, in parent: LocalFolder, create: Bool) throws -> LocalFolder? {
        let path = parent.child(name)
        if name.isEmpty || name == "." || name == ".." {
            throw DestinationError.permanent("'\(path)' cannot be stored under a folder (empty, '.' or '..' component)", code: "invalid-name")
        }
        let flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
        var fd = openat(parent.descriptor, name, flags)
        if fd < 0 && errno == ENOENT {
            guard create else { return nil }
            // mkdirat never follows a link either: one there (even dangling) answers EEXIST, and the open below
            // then finds it.
            if mkdirat(parent.descriptor, name, 0o777) != 0 && errno != EEXIST {
                throw failure(errno, "cannot create folder \(display(path))", at: parent.creationPlace)
            }
            fd = openat(parent.descriptor, name, flags)
        }
        guard fd >= 0 else {
            let code = errno
            if code == ENOTDIR || code == ELOOP { throw notAFolder(name, in: parent) }
            if code == ENOENT && !create { return nil }
            throw failure(code, "cannot open folder \(display(path))", at: .file)
        }
        return LocalFolder(descriptor: fd, path: path)
    }

    // MARK: - What is in the way

    /// The type bits (`S_IFMT`) of `name` in `folder`, the name itself and not what a link points to; nil when
    /// there is nothing by that name (or it cannot be looked at: `errno` says why, and the operation that follows reports it).
    func kind(of name: String, in folder: LocalFolder) -> mode_t? {
        var st = stat()
        guard fstatat(folder.descriptor, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return st.st_mode & S_IFMT
    }

    /// The error for a name that is not a folder where one is needed: a link (named, with its target), or a file.
    func notAFolder(_ name: String, in parent: LocalFolder) -> DestinationError {
        if kind(of: name, in: parent) == S_IFLNK { return linkError(name, in: parent) }
        return .permanent("\(display(parent.child(name))) is a file, not a folder", code: "not-a-folder")
    }

    /// The error for a symbolic link met in the destination: the file whose path leads through it (or ends on it)
    /// fails alone, permanently; the link and what it points to are left as they are.
    func linkError(_ name: String, in parent: LocalFolder) -> DestinationError {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlinkat(parent.descriptor, name, &buffer, buffer.count - 1)
        let target = length >= 0 ? " to " + String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        return .permanent(
            "\(display(parent.child(name))) is a symbolic link\(target): syncgate never writes, renames or deletes through a link in "
                + "the destination, nor replaces one (remove the link, or make it a real folder, then `syncgate retry`)",
            code: "symlink"
        )
    }

    // MARK: - Errors

    /// The error for `code` at `place`; an I/O error or a missing folder is the destination's when the root no
    /// longer answers (see ``rootAnswers()``).
    func failure(_ code: Int32, _ what: String, at place: LocalErrno.Place) -> DestinationError {
        let suspect = code == EIO || code == ENOENT
        if suspect && place != .root && !rootAnswers() {
            return LocalErrno.error(code, "\(what) (the destination folder \(rootPath) is gone or was replaced while syncgate ran)",
                                    at: place, rootAnswers: false)
        }
        return LocalErrno.error(code, what, at: place)
    }

    /// Whether the root held open is still the folder its path leads to, on a file system that answers.
    func rootAnswers() -> Bool {
        guard let root = state.withLock({ $0.root }) else { return false }
        var held = stat(), now = stat(), fs = statvfs()
        guard fstat(root.descriptor, &held) == 0, stat(rootPath, &now) == 0, fstatvfs(root.descriptor, &fs) == 0 else { return false }
        return held.st_dev == now.st_dev && held.st_ino == now.st_ino && held.st_nlink > 0
    }

    /// `mkdir -p`: makes `path` and its missing parents. 0, or the errno of the first that cannot be made.
    static func makeFolders(_ path: String) -> Int32 {
        if mkdir(path, 0o777) == 0 || errno == EEXIST { return 0 }
        guard errno == ENOENT else { return errno }
        let parent = LocalDestination.split(path).folder
        guard !parent.isEmpty, parent != path, parent != "." else { return ENOENT }
        let code = makeFolders(parent)
        guard code == 0 else { return code }
        return mkdir(path, 0o777) == 0 || errno == EEXIST ? 0 : errno
    }
}
