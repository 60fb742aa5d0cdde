#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A file that changed (size or modification time) while it was being delivered: the destination may hold a mix of
/// two versions, so the attempt does not count as delivered.
public struct FileChangedError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var detail: String
    public init(path: String, detail: String) {
        self.path = path
        self.detail = detail
    }
    public var description: String { "\(path) changed while it was being sent (\(detail)); it will be sent again" }
}

extension UploadItem {
    /// Throws ``FileChangedError`` when the file on disk no longer has the planned size and modification time.
    /// Call it before making an upload visible (a rename, a multipart completion) so that a destination never
    /// holds a mix of two versions; the delivery layer calls it again after every upload.
    public func verifyUnchanged() throws {
        try FileChangeCheck.verifyUnchanged(self)
    }
}

enum FileChangeCheck {
    /// Throws ``FileChangedError`` when the file's size or modification time differs from the planned ones.
    static func verifyUnchanged(_ item: UploadItem) throws {
        guard let now = FileStat.of(item.absolutePath) else {
            throw FileChangedError(path: item.relativePath, detail: "it was deleted")
        }
        if now.size != item.size {
            throw FileChangedError(path: item.relativePath, detail: "size \(item.size) -> \(now.size)")
        }
        if !FileStat.sameModificationTime(now.modificationTime, item.modificationTime) {
            throw FileChangedError(path: item.relativePath, detail: "modification time changed")
        }
    }
}

/// What `stat` says of a file.
public struct FileStat: Sendable, Hashable {
    public var size: Int64
    public var modificationTime: Date
    public var isRegular: Bool

    /// Whether two modification times are the same one (to the microsecond: the ledger stores them as doubles).
    public static func sameModificationTime(_ a: Date, _ b: Date) -> Bool {
        abs(a.timeIntervalSince(b)) < 0.000_001
    }

    /// `stat` (following links); `nil` when the file is not there.
    public static func of(_ path: String) -> FileStat? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return FileStat(st)
    }

    init(_ st: stat) {
        size = Int64(st.st_size)
        #if canImport(Darwin)
        let ts = st.st_mtimespec
        #else
        let ts = st.st_mtim
        #endif
        modificationTime = Date(timeIntervalSince1970: TimeInterval(ts.tv_sec) + TimeInterval(ts.tv_nsec) / 1e9)
        isRegular = (st.st_mode & S_IFMT) == S_IFREG
    }
}
