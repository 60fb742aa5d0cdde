#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A regular file found in a source. Its absolute path is not stored but joined on demand from the source's
/// folder (one string shared by all its files) and the relative path, which keeps the plans of many files small.
public struct ScannedFile: Sendable, Hashable {
    public var source: String
    public var relativePath: String
    public var size: Int64
    public var modificationTime: Date
    /// The source's folder, as the scan walked it.
    var root: String
    private var absoluteOverride: String?

    init(source: String, root: String, relativePath: String, size: Int64, modificationTime: Date) {
        self.source = source
        self.root = root
        self.relativePath = relativePath
        self.size = size
        self.modificationTime = modificationTime
    }

    public var absolutePath: String {
        get { absoluteOverride ?? root + "/" + relativePath }
        set { absoluteOverride = newValue }
    }

    public var key: FileKey { FileKey(source: source, path: relativePath) }
}

/// Something in a source that was passed over, with why.
public struct ScanWarning: Sendable, Hashable, CustomStringConvertible {
    public var source: String
    public var relativePath: String
    public var message: String
    /// The source's folder itself is missing: the source fails (a source marked `optional` gives no warning).
    public var sourceMissing = false
    public var description: String { "\(source): \(relativePath.isEmpty ? "." : relativePath): \(message)" }
}

/// Walks a source folder: regular files selected by include/exclude; symbolic links only when `follow_symlinks`
/// is on (never in a loop, and then at most `max_entries` entries in all); FIFOs, sockets and devices skipped with a warning; unreadable folders reported.
/// Files come out in the byte order of their relative paths (the ledger's order, so a sync can walk both side by
/// side): each folder's entries are sorted by their UTF-8 bytes, a folder's name as if it ended with `/`.
public struct SourceScanner: Sendable {
    public init() {}

    public func scan(_ source: SourceConfig) -> (files: [ScannedFile], warnings: [ScanWarning]) {
        var files: [ScannedFile] = []
        let warnings = scan(source) { files.append($0) }
        return (files, warnings)
    }

    /// Walks the source, handing each file to `visit` as it is found (in byte order), so that nothing is kept
    /// per file; returns what was passed over. With `share`, only the files it accepts (by relative path) are
    /// statted and handed over: a file the folder's listing says is a regular file and `share` declines is passed
    /// over without a system call (a fleet's instances split a walk this way, see ``FleetView``).
    public func scan(_ source: SourceConfig, share: ((String) -> Bool)? = nil, visit: (ScannedFile) throws -> Void) rethrows -> [ScanWarning] {
        var warnings: [ScanWarning] = []
        var root = stat()
        guard stat(source.path, &root) == 0, (root.st_mode & S_IFMT) == S_IFDIR else {
            if !source.optional {
                warnings.append(ScanWarning(source: source.name, relativePath: "", message: source.checkFolder()?.message ?? "the source folder is missing",
                                            sourceMissing: true))
            }
            return warnings
        }
        let rootID: [UInt64] = [UInt64(root.st_dev), UInt64(root.st_ino)]
        var state = Walk(visiting: [rootID], own: source.followSymlinks ? source.own.identities() : [])
        try walk(source, absolute: source.path, relative: "", share: share, visit: visit, warnings: &warnings, state: &state)
        return warnings
    }

    /// The file at `relativePath` in `source`, as a walk would have found it: nil when it is not there, not a
    /// regular file, not selected by the source's globs, below an excluded folder, or reached through a link while
    /// the source does not follow links.
    public func file(at relativePath: String, in source: SourceConfig) -> ScannedFile? {
        let parts = relativePath.split(separator: "/", omittingEmptySubsequences: false)
        guard !parts.isEmpty, !parts.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else { return nil }
        var absolute = source.path
        var relative = ""
        let own = source.followSymlinks ? source.own.identities() : []
        for (index, part) in parts.enumerated() {
            absolute += "/" + part
            relative += (relative.isEmpty ? "" : "/") + part
            var st = stat()
            guard lstat(absolute, &st) == 0 else { return nil }
            if st.st_mode & S_IFMT == S_IFLNK {
                guard source.followSymlinks, stat(absolute, &st) == 0 else { return nil }
            }
            let kind = st.st_mode & S_IFMT
            if index < parts.count - 1 {
                guard kind == S_IFDIR, !source.skipsFolder(relative), !own.contains([UInt64(st.st_dev), UInt64(st.st_ino)]) else { return nil }
            } else {
                guard kind == S_IFREG, source.selects(relative) else { return nil }
                let stat = FileStat(st)
                return ScannedFile(source: source.name, root: source.path, relativePath: relative, size: stat.size,
                                   modificationTime: stat.modificationTime)
            }
        }
        return nil
    }

    /// What a walk of one source carries from folder to folder.
    struct Walk {
        /// The folders on the way down (a folder met again among them is a loop).
        var visiting: Set<[UInt64]>
        /// With `follow_symlinks`: syncgate's own folders, by device and inode (a link may lead into one).
        var own: Set<[UInt64]> = []
        /// Entries taken in so far (counted when the source follows links), and whether the bound stopped the walk.
        var entries = 0
        var stopped = false
    }

    /// Walks the folder `absolute`, opened by that path at the root and below it by its name in the folder above
    /// (`parent`): each open then follows one link at most, however deep the links go (a path through more than 40
    /// links fails with ELOOP, and the kernel may count a path's links twice when it retries a lookup under load).
    private func walk(
        _ source: SourceConfig, absolute: String, relative: String, parent: (folder: Int32, name: String)? = nil,
        share: ((String) -> Bool)?, visit: (ScannedFile) throws -> Void, warnings: inout [ScanWarning], state: inout Walk
    ) rethrows {
        if state.stopped { return }
        func open() -> OpaquePointer? {
            guard let parent else { return opendir(absolute) }
            let fd = openat(parent.folder, parent.name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            guard let dir = fdopendir(fd) else {
                let failure = errno
                close(fd)
                errno = failure
                return nil
            }
            return dir
        }
        guard let dir = open() else {
            warnings.append(ScanWarning(source: source.name, relativePath: relative, message: "cannot read folder: \(String(cString: strerror(errno)))"))
            return
        }
        defer { closedir(dir) }
        func child(_ name: String) -> String { relative.isEmpty ? name : relative + "/" + name }
        var names: [String] = []
        while let entry = readdir(dir) {
            let decoded: String? = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(validatingCString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
            }
            guard let name = decoded else {
                let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix(while: { $0 != 0 })) }
                let shown = TerminalText.undecodable(bytes)
                warnings.append(ScanWarning(source: source.name, relativePath: child(shown), message: "skipped: the name is not valid UTF-8"))
                continue
            }
            if name == "." || name == ".." { continue }
            // A regular file (as the listing says) that is another instance's share: not even statted.
            if let share, entry.pointee.d_type == UInt8(DT_REG), !share(child(name)) { continue }
            names.append(name)
        }
        // Stat every entry first (relative to the open folder: no path walk): whether it is a folder decides
        // where it sorts.
        let folder = dirfd(dir)
        var entries: [(name: String, st: stat, kind: mode_t)] = []
        entries.reserveCapacity(names.count)
        for name in names {
            var st = stat()
            guard fstatat(folder, name, &st, AT_SYMLINK_NOFOLLOW) == 0 else {
                warnings.append(ScanWarning(source: source.name, relativePath: child(name), message: "cannot stat: \(String(cString: strerror(errno)))"))
                continue
            }
            var kind = st.st_mode & S_IFMT
            if kind == S_IFLNK {
                guard source.followSymlinks else {
                    warnings.append(ScanWarning(source: source.name, relativePath: child(name), message: "skipped: symbolic link (set follow_symlinks: true to follow links)"))
                    continue
                }
                guard fstatat(folder, name, &st, 0) == 0 else {
                    warnings.append(ScanWarning(source: source.name, relativePath: child(name), message: "skipped: broken or looping symbolic link"))
                    continue
                }
                kind = st.st_mode & S_IFMT
            }
            entries.append((name, st, kind))
        }
        // Sorted by byte keys (a folder's with a "/" after its name) through an index, so the sort moves
        // integers rather than whole stat records.
        let keys: [[UInt8]] = entries.map { entry in
            var key = Array(entry.name.utf8)
            if entry.kind == S_IFDIR { key.append(UInt8(ascii: "/")) }
            return key
        }
        var order = Array(entries.indices)
        order.sort { ExactString.compare(keys[$0], keys[$1]) < 0 }
        for (name, st, kind) in order.lazy.map({ entries[$0] }) {
            let childRelative = child(name)
            if state.stopped { return }
            // Following links, a walk is bounded by the entries it takes in, each time it reaches one: links that
            // lead to the same folders over and over without a loop (a DAG: 22 levels of 2 links each make 4
            // million paths) would otherwise make it run for minutes.
            if source.followSymlinks {
                state.entries += 1
                if state.entries > source.maxEntries.value {
                    state.stopped = true
                    warnings.append(ScanWarning(source: source.name, relativePath: childRelative, message:
                        "stopped walking: more than \(source.maxEntries.value) entries (max_entries, with follow_symlinks: an entry "
                        + "reached again through another link counts again); the rest of this source is not synced this run"))
                    return
                }
            }
            switch kind {
            case S_IFDIR:
                let childAbsolute = absolute + "/" + name
                if source.skipsFolder(childRelative) { continue }
                let id: [UInt64] = [UInt64(st.st_dev), UInt64(st.st_ino)]
                if state.own.contains(id) { continue }
                guard !state.visiting.contains(id) else {
                    warnings.append(ScanWarning(source: source.name, relativePath: childRelative, message: "skipped: folder link loop"))
                    continue
                }
                state.visiting.insert(id)
                try walk(
                    source, absolute: childAbsolute, relative: childRelative, parent: (folder, name), share: share, visit: visit,
                    warnings: &warnings, state: &state)
                state.visiting.remove(id)
            case S_IFREG:
                guard source.selects(childRelative), share?(childRelative) != false else { continue }
                let stat = FileStat(st)
                try visit(ScannedFile(
                    source: source.name, root: source.path, relativePath: childRelative,
                    size: stat.size, modificationTime: stat.modificationTime
                ))
            default:
                guard source.selects(childRelative) else { continue }
                let what = kind == S_IFIFO ? "a FIFO" : kind == S_IFSOCK ? "a socket" : "a device"
                warnings.append(ScanWarning(source: source.name, relativePath: childRelative, message: "skipped: \(what), not a regular file"))
            }
        }
    }
}
