#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import Foundation
import Synchronization
import NIOPosix
import SyncgateCore

/// `type: local`: writes each file under a folder, keeping its relative path, through a temporary file, fsync and
/// rename, so that a reader never sees half a file.
///
/// Nothing is written, renamed, deleted or listed through a symbolic link below the folder: every name is reached
/// from the folder's descriptor one name at a time with `O_NOFOLLOW` (see ``LocalTree``); a file whose path meets a
/// link fails alone, permanently, and the link is left as it is. Errors are classified by ``LocalErrno``.
public struct LocalDestination: Destination {
    public static let registration = PluginRegistration(
        type: "local", summary: "a folder on this machine (no server needed)"
    , decode: { setup in
        let config = try setup.decode(LocalConfig.self)
        let root = setup.resolvePath(config.path)
        setup.writesInto(root)
        setup.deliversTo(root)
        return { LocalDestination(root: root, fsync: config.fsync) }
    })

    /// Absolute path of the destination folder.
    public let root: String
    public let fsync: LocalFsync

    /// The copy replaces the old one whole (temporary file, then rename).
    public var resendIsHarmless: Bool { true }
    public var hashesWhileSending: Bool { true }
    public var verifiesUnchangedBeforePublishing: Bool { true }
    /// The relative path itself (checked, never changed).
    public var remoteNamesAreDistinct: Bool { true }

    /// The folder held open, and the folders under it (see ``LocalTree``).
    let tree: LocalTree

    public init(root: String, fsync: LocalFsync = .batch) {
        self.root = root
        self.fsync = fsync
        tree = LocalTree(rootPath: root)
    }

    public func remoteName(forRelativePath path: String) throws -> String {
        // One pass over the bytes (this runs for every file of every sync).
        var copy = path
        let problem: String? = copy.withUTF8 { bytes in
            let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
            let reserved = LocalDestination.temporaryPrefixBytes
            var start = 0
            for end in 0...bytes.count where end == bytes.count || bytes[end] == slash {
                defer { start = end + 1 }
                let length = end - start
                if length == 0 || (length == 1 && bytes[start] == dot) || (length == 2 && bytes[start] == dot && bytes[start + 1] == dot) {
                    return "'\(path)' cannot be stored under a folder (empty, '.' or '..' component)"
                }
                if length >= reserved.count && bytes[start] == dot && bytes[start..<(start + reserved.count)].elementsEqual(reserved) {
                    return "'\(path)': names starting with \(LocalDestination.temporaryPrefix) are reserved"
                }
            }
            return nil
        }
        if let problem { throw DestinationError.permanent(problem, code: "invalid-name") }
        return path
    }

    static let temporaryPrefix = ".syncgate-tmp-"
    static let temporaryPrefixBytes = Array(temporaryPrefix.utf8)
    static let processID = getpid()
    static let temporaryCounter = Atomic<Int>(0)

    public func upload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt {
        let (folderPath, name) = LocalDestination.split(item.remoteName)
        // Made relative to the folder's descriptor, which was opened name by name without following a link.
        guard var folder = try tree.folder(folderPath, create: true) else {
            throw LocalErrno.error(ENOENT, "cannot create folder \(tree.display(folderPath))", at: .file)
        }
        // pid + a counter: unique among this process's copies, and O_EXCL refuses anything left from before.
        let temporary = LocalDestination.temporaryPrefix + "\(LocalDestination.processID)-"
            + String(LocalDestination.temporaryCounter.add(1, ordering: .relaxed).newValue, radix: 36) + "-" + LocalDestination.bounded(name)
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC
        var out = openat(folder.descriptor, temporary, flags, 0o644)
        if out < 0 && errno == ENOENT && !folder.isRoot {
            // The folder held open was removed (or moved) since it was opened: look its path up again, once.
            tree.forgetFolders()
            guard let again = try tree.folder(folderPath, create: true) else {
                throw LocalErrno.error(ENOENT, "cannot create folder \(tree.display(folderPath))", at: .file)
            }
            folder = again
            out = openat(folder.descriptor, temporary, flags, 0o644)
        }
        guard out >= 0 else { throw tree.failure(errno, "cannot create \(tree.display(folder.child(temporary)))", at: folder.creationPlace) }
        var closed = false
        defer {
            if !closed { close(out) }
        }
        do {
            let reader = try FileReader(path: item.absolutePath)
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: FileHasher.bufferSize(for: item.size), alignment: 16)
            defer { buffer.deallocate() }
            var offset: Int64 = 0
            var writebackStart: Int64 = 0
            // A new file's hash is taken from the bytes as they are copied (one read instead of two).
            var hasher: SHA256? = item.sha256.isEmpty ? SHA256() : nil
            while true {
                try Task.checkCancellation()
                let n = try await reader.readToSend(at: offset, into: buffer)
                if n == 0 { break }
                hasher?.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                // A short read that ends at the planned size is the end of the file: no read is spent to meet it
                // (a file that grew since shows a larger size to the check below, and a longer read to this one).
                let atPlannedEnd = n < buffer.count && offset + Int64(n) == item.size
                var written = 0
                while written < n {
                    let w = write(out, buffer.baseAddress! + written, n - written)
                    if w < 0 {
                        if errno == EINTR { continue }
                        throw tree.failure(errno, "cannot write \(tree.display(item.remoteName))", at: .file)
                    }
                    written += w
                }
                offset += Int64(n)
                if fsync != .off, offset - writebackStart >= LocalDestination.writebackStep {
                    // A large copy that must be made durable starts going to the disk while it is written, so
                    // the flush at the end finds little left to wait for.
                    _ = LocalDestination.syncFileRange?(out, writebackStart, offset - writebackStart, LocalDestination.syncFileRangeWrite)
                    writebackStart = offset
                }
                progress(offset)
                if atPlannedEnd { break }
            }
            // A file that changed while it was copied must not replace the old copy with a mix of two versions.
            try item.verifyUnchanged()
            if offset != item.size { throw FileChangedError(path: item.relativePath, detail: "read \(offset) of \(item.size) bytes") }
            if fsync == .file, Glibc.fsync(out) != 0 { throw tree.failure(errno, "fsync \(tree.display(item.remoteName))", at: .file) }
            var written = stat()
            let tag = fstat(out, &written) == 0 ? LocalLister.tag(written) : nil
            close(out)
            closed = true
            try moveIntoPlace(temporary, as: name, in: folder, remoteName: item.remoteName)
            if fsync == .file { _ = Glibc.fsync(folder.descriptor) }
            return Receipt(remoteName: item.remoteName, etag: tag, detail: "\(offset) bytes", sha256: hasher.map { FileHasher.hex($0.finalize()) })
        } catch {
            unlinkat(folder.descriptor, temporary, 0)
            throw error
        }
    }

    /// Renames the finished copy to `name`. A new name takes one call (`renameat2` with `RENAME_NOREPLACE`); a
    /// name already there is looked at first: a link or a folder is refused and left as it is (the link is not
    /// syncgate's to remove), anything else is replaced. `renameat` replaces a name and never follows it, so a link
    /// that appears between the look and the rename is replaced, never written through.
    private func moveIntoPlace(_ temporary: String, as name: String, in folder: LocalFolder, remoteName: String) throws {
        if let renameat2 = LocalDestination.renameat2 {
            if renameat2(folder.descriptor, temporary, folder.descriptor, name, LocalDestination.renameNoReplace) == 0 { return }
            let code = errno
            // EINVAL, ENOSYS: a file system (or kernel) without RENAME_NOREPLACE.
            if code != EEXIST && code != EINVAL && code != ENOSYS { throw tree.failure(code, "cannot rename into \(tree.display(remoteName))", at: .file) }
        }
        switch tree.kind(of: name, in: folder) {
        case S_IFLNK: throw tree.linkError(name, in: folder)
        case S_IFDIR: throw DestinationError.permanent("\(tree.display(remoteName)) is a folder; a file cannot replace it", code: "not-a-file")
        default: break
        }
        guard renameat(folder.descriptor, temporary, folder.descriptor, name) == 0 else {
            throw tree.failure(errno, "cannot rename into \(tree.display(remoteName))", at: .file)
        }
    }

    /// `name` cut to at most 100 bytes of UTF-8 at a character's boundary (a temporary file's name must stay
    /// within NAME_MAX whatever the name's script).
    static func bounded(_ name: String) -> Substring {
        if name.utf8.count <= 100 { return name[...] }
        var bytes = 0
        var end = name.startIndex
        for character in name {
            bytes += character.utf8.count
            if bytes > 100 { break }
            end = name.index(after: end)
        }
        return name[..<end]
    }

    /// `fsync: batch`: one `syncfs` of the destination's file system covers every copy renamed so far.
    public func makeDurable() throws {
        guard fsync == .batch else { return }
        guard let folder = try tree.root(create: false) else {
            throw LocalErrno.error(ENOENT, "cannot flush \(root): the folder is gone", at: .root)
        }
        if let syncfs = LocalDestination.syncfs {
            guard syncfs(folder.descriptor) == 0 else {
                throw tree.failure(errno, "cannot flush the file system of \(root) (syncfs)", at: .root)
            }
        } else {
            sync()
        }
    }

    /// How many written bytes of a copy to be made durable are handed to the disk at a time (`sync_file_range`).
    static let writebackStep: Int64 = 8 << 20
    /// `SYNC_FILE_RANGE_WRITE`: start writing the range back, without waiting.
    static let syncFileRangeWrite: UInt32 = 2

    /// Linux's `sync_file_range(2)`; nil elsewhere (see ``linuxFunction(_:as:)``).
    static let syncFileRange = linuxFunction("sync_file_range", as: (@convention(c) (Int32, Int64, Int64, UInt32) -> Int32).self)

    /// Linux's `renameat2(2)`; nil elsewhere (the name is then looked at before every rename).
    static let renameat2 = linuxFunction(
        "renameat2", as: (@convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32).self
    )
    /// `RENAME_NOREPLACE`: fail with EEXIST rather than replace a name that is there.
    static let renameNoReplace: UInt32 = 1

    /// Linux's `syncfs(2)`; nil elsewhere, where `sync()` flushes every file system instead.
    static let syncfs = linuxFunction("syncfs", as: (@convention(c) (Int32) -> Int32).self)

    /// A glibc function that its headers declare only under _GNU_SOURCE, which Swift's Glibc module leaves out: it
    /// is looked up by name. nil on other systems.
    static func linuxFunction<F>(_ name: String, as type: F.Type) -> F? {
        #if os(Linux)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: type)
        #else
        return nil
        #endif
    }

    /// Removes temporary files that a killed run left in the folders this batch writes to (those whose process is
    /// gone), so that a crash leaves no debris. The folders are opened as uploads open them (never through a link,
    /// so nothing outside the destination is looked at), which also readies them for the uploads.
    public func prepare(_ items: [UploadItem]) async throws -> [String: DestinationError] {
        var folders = Set<String>()
        for item in items { folders.insert(LocalDestination.split(item.remoteName).folder) }
        for path in folders {
            guard let folder = try? tree.folder(path, create: false), let entries = try? folder.entries() else { continue }
            for entry in entries where entry.name.hasPrefix(LocalDestination.temporaryPrefix) {
                let rest = entry.name.dropFirst(LocalDestination.temporaryPrefix.count)
                guard let pid = rest.split(separator: "-").first.flatMap({ Int32($0) }) else { continue }
                guard pid != LocalDestination.processID, kill(pid, 0) != 0, errno == ESRCH else { continue }
                if tree.kind(of: entry.name, in: folder) == S_IFREG { unlinkat(folder.descriptor, entry.name, 0) }
            }
        }
        return [:]
    }

    /// Deletes one file, then its folders that are left empty. Its folders are looked up as an upload looks them up
    /// (never through a link); a link, or a folder, under the name is refused and left as it is.
    public func delete(remoteName: String) async throws {
        let name = try self.remoteName(forRelativePath: remoteName)
        let (folderPath, leaf) = LocalDestination.split(name)
        let notFound = DestinationError.permanent("no such file: \(remoteName)", code: "not-found")
        guard let folder = try tree.folder(folderPath, create: false) else { throw notFound }
        switch tree.kind(of: leaf, in: folder) {
        case nil: throw notFound
        case S_IFLNK: throw tree.linkError(leaf, in: folder)
        case S_IFDIR: throw DestinationError.permanent("\(tree.display(name)) is a folder, not a file", code: "not-a-file")
        default: break
        }
        guard unlinkat(folder.descriptor, leaf, 0) == 0 else {
            if errno == ENOENT { throw notFound }
            throw tree.failure(errno, "cannot delete \(tree.display(name))", at: .file)
        }
        tree.removeEmptyFolders(folderPath)
    }

    /// The regular files under the folder (links are neither followed nor listed, see ``LocalLister``).
    public func list() async throws -> RemoteListing {
        let entries = try await LocalLister.entries(of: tree)
        return RemoteListing(entries: entries, spaceAvailable: freeSpace())
    }

    /// The listing for `syncgate check`, a page at a time in byte order, as the folders are walked.
    public func verificationListing(beforeRequest: () async throws -> Void,
                                    page: ([RemoteListing.Entry]) async throws -> Void) async throws -> Bool {
        try await beforeRequest()
        try await LocalLister.forEachPage(of: tree, page)
        return true
    }

    public var verificationListingIsOrdered: Bool { true }

    /// The SHA-256 of a copy, read whole (`syncgate check --checksum`) on a thread of NIO's blocking pool, not on
    /// one the tasks share; nil when no regular file has the name.
    public func copySHA256(remoteName: String) async throws -> String? {
        let tree = tree
        return try await NIOThreadPool.singleton.runIfActive { try LocalCopyHasher.sha256(of: remoteName, in: tree) }
    }

    /// The destination folder can be used: it exists (it is made when missing, as the first upload would), is a
    /// folder, on a file system that is writable and not full, and syncgate may write in it. Looks the folder up
    /// afresh (a disk mounted again since the last run is found).
    public func probe() async throws {
        tree.close()
        guard let folder = try tree.root(create: true) else { return }
        var fs = statvfs()
        guard fstatvfs(folder.descriptor, &fs) == 0 else {
            throw LocalErrno.error(errno, "cannot read the file system of \(root)", at: .root)
        }
        if fs.f_flag & UInt(ST_RDONLY) != 0 {
            throw LocalErrno.error(EROFS, "\(root) is on a file system mounted read-only", at: .root)
        }
        if faccessat(folder.descriptor, ".", W_OK | X_OK, AT_EACCESS) != 0 {
            throw LocalErrno.error(errno, "syncgate may not write in \(root)", at: .root)
        }
        if fs.f_bfree == 0 || (fs.f_files > 0 && fs.f_ffree == 0) {
            throw LocalErrno.error(ENOSPC, "\(root) is on a full file system", at: .root)
        }
    }

    /// Lets the folders held open go: the next run looks the destination folder up again.
    public func finish() async {
        tree.close()
    }

    /// The folder and the name of a path (the part before and after its last `/`; no `/`: the folder is "").
    static func split(_ path: String) -> (folder: String, name: String) {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return ("", path) }
        return (String(path[..<slash]), String(path[path.index(after: slash)...]))
    }

    func freeSpace() -> Int64? {
        guard let folder = try? tree.root(create: false) else { return nil }
        var st = statvfs()
        guard fstatvfs(folder.descriptor, &st) == 0 else { return nil }
        return Int64(st.f_bavail) * Int64(st.f_frsize)
    }
}
