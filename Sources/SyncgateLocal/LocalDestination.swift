#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import Foundation
import Synchronization
import SyncgateCore

/// `type: local`: writes each file under a folder, keeping its relative path, through a temporary file, fsync and
/// rename, so that a reader never sees half a file.
public struct LocalDestination: Destination {
    public static let registration = PluginRegistration(
        type: "local", summary: "a folder on this machine (no server needed)"
    ) { setup in
        let config = try setup.decode(LocalConfig.self)
        return LocalDestination(root: setup.resolvePath(config.path), fsync: config.fsync)
    }

    /// Absolute path of the destination folder.
    public let root: String
    public let fsync: LocalFsync

    /// The copy replaces the old one whole (temporary file, then rename).
    public var resendIsHarmless: Bool { true }
    public var hashesWhileSending: Bool { true }
    /// The relative path itself (checked, never changed).
    public var remoteNamesAreDistinct: Bool { true }

    public init(root: String, fsync: LocalFsync = .batch) {
        self.root = root
        self.fsync = fsync
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
        let target = root + "/" + item.remoteName
        let (folder, name) = LocalDestination.split(target)
        // pid + a counter: unique among this process's copies, and O_EXCL refuses anything left from before.
        let temporary = folder + "/" + LocalDestination.temporaryPrefix + "\(LocalDestination.processID)-"
            + String(LocalDestination.temporaryCounter.add(1, ordering: .relaxed).newValue, radix: 36) + "-" + name.prefix(100)
        // The folders are made only when the file cannot be created for their lack (not checked for every file).
        var out = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if out < 0 && errno == ENOENT {
            try LocalDestination.makeFolders(folder)
            out = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        }
        guard out >= 0 else { throw LocalDestination.posixError("cannot create \(temporary)") }
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
                let n = try reader.read(at: offset, into: buffer)
                if n == 0 { break }
                hasher?.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                var written = 0
                while written < n {
                    let w = write(out, buffer.baseAddress! + written, n - written)
                    if w < 0 {
                        if errno == EINTR { continue }
                        throw LocalDestination.posixError("cannot write \(target)")
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
            }
            // A file that changed while it was copied must not replace the old copy with a mix of two versions.
            try item.verifyUnchanged()
            if offset != item.size { throw FileChangedError(path: item.relativePath, detail: "read \(offset) of \(item.size) bytes") }
            if fsync == .file, Glibc.fsync(out) != 0 { throw LocalDestination.posixError("fsync \(target)") }
            close(out)
            closed = true
            guard rename(temporary, target) == 0 else { throw LocalDestination.posixError("cannot rename into \(target)") }
            if fsync == .file { LocalDestination.syncFolder(folder) }
            return Receipt(remoteName: item.remoteName, detail: "\(offset) bytes", sha256: hasher.map { FileHasher.hex($0.finalize()) })
        } catch {
            unlink(temporary)
            throw error
        }
    }

    /// `fsync: batch`: one `syncfs` of the destination's file system covers every copy renamed so far.
    public func makeDurable() throws {
        guard fsync == .batch else { return }
        let fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw LocalDestination.posixError("cannot open \(root) to flush it") }
        defer { close(fd) }
        if let syncfs = LocalDestination.syncfs {
            guard syncfs(fd) == 0 else { throw LocalDestination.posixError("cannot flush the file system of \(root) (syncfs)") }
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
    /// gone), so that a crash leaves no debris.
    public func prepare(_ items: [UploadItem]) async throws -> [String: DestinationError] {
        let folders = Set(items.map { LocalDestination.split(root + "/" + $0.remoteName).folder })
        for folder in folders {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { continue }
            for name in names where name.hasPrefix(LocalDestination.temporaryPrefix) {
                let rest = name.dropFirst(LocalDestination.temporaryPrefix.count)
                guard let pid = rest.split(separator: "-").first.flatMap({ Int32($0) }) else { continue }
                if pid != getpid(), kill(pid, 0) != 0, errno == ESRCH { unlink(folder + "/" + name) }
            }
        }
        return [:]
    }

    public func delete(remoteName: String) async throws {
        let target = root + "/" + (try self.remoteName(forRelativePath: remoteName))
        guard unlink(target) == 0 else {
            if errno == ENOENT { throw DestinationError.permanent("no such file: \(remoteName)", code: "not-found") }
            throw LocalDestination.posixError("cannot delete \(remoteName)")
        }
    }

    public func list() async throws -> RemoteListing {
        var entries: [RemoteListing.Entry] = []
        guard let enumerator = FileManager.default.enumerator(
            at: URL(fileURLWithPath: root), includingPropertiesForKeys: [.isRegularFileKey, .fileSizeKey]
        ) else { return RemoteListing(entries: []) }
        let prefix = URL(fileURLWithPath: root).standardizedFileURL.path + "/"
        while let url = enumerator.nextObject() as? URL {
            let values = try? url.resourceValues(forKeys: [.isRegularFileKey, .fileSizeKey])
            guard values?.isRegularFile == true else { continue }
            let path = url.standardizedFileURL.path
            guard path.hasPrefix(prefix) else { continue }
            let relative = String(path.dropFirst(prefix.count))
            if relative.split(separator: "/").last?.hasPrefix(LocalDestination.temporaryPrefix) == true { continue }
            entries.append(RemoteListing.Entry(name: relative, size: values?.fileSize.map(Int64.init)))
        }
        entries.sort { $0.name < $1.name }
        return RemoteListing(entries: entries, spaceAvailable: LocalDestination.freeSpace(root))
    }

    /// The folder and the name of a path (the part before and after its last `/`).
    static func split(_ path: String) -> (folder: String, name: String) {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return (".", path) }
        return (String(path[..<slash]), String(path[path.index(after: slash)...]))
    }

    static func makeFolders(_ folder: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw DestinationError.permanent("cannot create folder \(folder): \((error as NSError).localizedDescription)", code: "mkdir")
        }
    }

    static func syncFolder(_ folder: String) {
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            _ = Glibc.fsync(fd)
            close(fd)
        }
    }

    static func freeSpace(_ path: String) -> Int64? {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return nil }
        return Int64(st.f_bavail) * Int64(st.f_frsize)
    }

    /// ENOSPC, EIO and the like may pass; permission and name problems will not.
    static func posixError(_ what: String) -> DestinationError {
        let code = errno
        let message = "\(what): \(String(cString: strerror(code)))"
        switch code {
        case ENOSPC, EIO, EAGAIN, EINTR, EDQUOT, EBUSY, ETXTBSY: return .retryable(message, code: "errno-\(code)")
        default: return .permanent(message, code: "errno-\(code)")
        }
    }
}
