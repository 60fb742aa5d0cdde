#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A regular file found in a source.
public struct ScannedFile: Sendable, Hashable {
    public var source: String
    public var relativePath: String
    public var absolutePath: String
    public var size: Int64
    public var modificationTime: Date
    public var key: FileKey { FileKey(source: source, path: relativePath) }
}

/// Something in a source that was passed over, with why.
public struct ScanWarning: Sendable, Hashable, CustomStringConvertible {
    public var source: String
    public var relativePath: String
    public var message: String
    public var description: String { "\(source): \(relativePath.isEmpty ? "." : relativePath): \(message)" }
}

/// Walks a source folder: regular files selected by include/exclude; symbolic links only when `follow_symlinks`
/// is on (never in a loop); FIFOs, sockets and devices skipped with a warning; unreadable folders reported.
public struct SourceScanner: Sendable {
    public init() {}

    public func scan(_ source: SourceConfig) -> (files: [ScannedFile], warnings: [ScanWarning]) {
        var files: [ScannedFile] = []
        var warnings: [ScanWarning] = []
        var root = stat()
        guard stat(source.path, &root) == 0, (root.st_mode & S_IFMT) == S_IFDIR else {
            warnings.append(ScanWarning(source: source.name, relativePath: "", message: "source folder \(source.path) does not exist or is not a folder"))
            return (files, warnings)
        }
        var visiting: Set<[UInt64]> = [[UInt64(root.st_dev), UInt64(root.st_ino)]]
        walk(source, absolute: source.path, relative: "", files: &files, warnings: &warnings, visiting: &visiting)
        files.sort { $0.relativePath < $1.relativePath }
        return (files, warnings)
    }

    private func walk(
        _ source: SourceConfig, absolute: String, relative: String, files: inout [ScannedFile],
        warnings: inout [ScanWarning], visiting: inout Set<[UInt64]>
    ) {
        guard let dir = opendir(absolute) else {
            warnings.append(ScanWarning(source: source.name, relativePath: relative, message: "cannot read folder: \(String(cString: strerror(errno)))"))
            return
        }
        defer { closedir(dir) }
        var names: [(String, UInt8)] = []
        while let entry = readdir(dir) {
            let type = entry.pointee.d_type
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                Array(raw.prefix(while: { $0 != 0 }))
            }
            guard let name = String(validating: bytes, as: UTF8.self) else {
                let shown = String(decoding: bytes, as: UTF8.self)
                warnings.append(ScanWarning(source: source.name, relativePath: relative.isEmpty ? shown : relative + "/" + shown, message: "skipped: the name is not valid UTF-8"))
                continue
            }
            if name == "." || name == ".." { continue }
            names.append((name, type))
        }
        for (name, _) in names {
            let childRelative = relative.isEmpty ? name : relative + "/" + name
            let childAbsolute = absolute + "/" + name
            var st = stat()
            guard lstat(childAbsolute, &st) == 0 else {
                warnings.append(ScanWarning(source: source.name, relativePath: childRelative, message: "cannot stat: \(String(cString: strerror(errno)))"))
                continue
            }
            var kind = st.st_mode & S_IFMT
            if kind == S_IFLNK {
                guard source.followSymlinks else {
                    warnings.append(ScanWarning(source: source.name, relativePath: childRelative, message: "skipped: symbolic link (set follow_symlinks: true to follow links)"))
                    continue
                }
                guard stat(childAbsolute, &st) == 0 else {
                    warnings.append(ScanWarning(source: source.name, relativePath: childRelative, message: "skipped: broken or looping symbolic link"))
                    continue
                }
                kind = st.st_mode & S_IFMT
            }
            switch kind {
            case S_IFDIR:
                if source.exclude.decision(for: childRelative) == true { continue }
                let id: [UInt64] = [UInt64(st.st_dev), UInt64(st.st_ino)]
                guard !visiting.contains(id) else {
                    warnings.append(ScanWarning(source: source.name, relativePath: childRelative, message: "skipped: folder link loop"))
                    continue
                }
                visiting.insert(id)
                walk(source, absolute: childAbsolute, relative: childRelative, files: &files, warnings: &warnings, visiting: &visiting)
                visiting.remove(id)
            case S_IFREG:
                guard source.selects(childRelative) else { continue }
                let stat = FileStat(st)
                files.append(ScannedFile(
                    source: source.name, relativePath: childRelative, absolutePath: childAbsolute,
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
