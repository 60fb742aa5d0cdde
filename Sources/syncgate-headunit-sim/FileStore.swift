import Foundation
import NIOCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The head unit's file storage: one app's files as plain files in a folder, so tests compare bytes.
/// The folder is the truth: ListFiles reads it, so a test may delete a file to play "ignition off".
final class FileStore: Sendable {
    let folder: URL
    /// The folder's path, built once: a chunk's file path is this and its name (no URL work per chunk).
    private let folderPath: String
    let quota: Int64

    private struct State {
        /// Names uploaded with persistentFile false during this simulator's life (lost at "ignition off").
        var volatileNames: Set<String> = []
        var cachedUsed: Int64?
        var cachedStamp: [Int] = []
    }

    /// Also held while the folder is listed or changed.
    private let state = Mutex(State())

    init(folder: URL, quota: Int64) throws {
        self.folder = folder
        self.folderPath = folder.path.hasSuffix("/") ? folder.path : folder.path + "/"
        self.quota = quota
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    private func path(_ name: String) -> String { folderPath + name }

    /// Names of the stored files, sorted.
    func names() -> [String] {
        state.withLock { _ in
            let items = (try? FileManager.default.contentsOfDirectory(atPath: folderPath)) ?? []
            return items.filter { !$0.hasPrefix(".sim-") }.sorted()
        }
    }

    /// Size of a stored regular file (plain stat: FileManager's attributes would look up owner names
    /// in /etc/passwd for every call).
    func size(of name: String) -> Int64? { size(atPath: path(name)) }

    private func size(atPath path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    func exists(_ name: String) -> Bool { size(of: name) != nil }

    /// Bytes stored. Cached and kept current by this store's own writes; a change of the folder's mtime by
    /// anyone else (a test deleting a file) forces a rescan.
    func used() -> Int64 {
        let stamp = folderStamp()
        if let cached = state.withLock({ state in state.cachedUsed.flatMap { stamp == state.cachedStamp ? $0 : nil } }) { return cached }
        let total = names().reduce(0) { $0 + (size(of: $1) ?? 0) }
        state.withLock { state in
            state.cachedUsed = total
            state.cachedStamp = stamp
        }
        return total
    }

    private func folderStamp() -> [Int] {
        var info = stat()
        guard stat(folderPath, &info) == 0 else { return [] }
        return [Int(info.st_mtim.tv_sec), Int(info.st_mtim.tv_nsec), Int(info.st_ino)]
    }

    /// Runs a change of `name` and keeps the cached total right (or drops it when it was stale already).
    private func tracking<T>(_ name: String, _ state: inout State, _ change: (inout State) -> T) -> T {
        let valid = state.cachedUsed != nil && folderStamp() == state.cachedStamp
        let before = size(of: name) ?? 0
        let result = change(&state)
        if valid, let used = state.cachedUsed {
            state.cachedUsed = used - before + (size(of: name) ?? 0)
            state.cachedStamp = folderStamp()
        } else {
            state.cachedUsed = nil
        }
        return result
    }

    func spaceAvailable() -> Int64 { max(0, quota - used()) }

    enum WriteResult { case ok, offsetMismatch, failed }

    /// Writes `bytes` at `offset`: offset 0 replaces the file, any other offset must equal the stored size.
    /// Straight from the received buffer with `pwrite` (no copy in between: a chunk is written once). The cached
    /// total follows from the file's size before and after (its `fstat`); only a file created changes the folder's
    /// stamp, so only then is the folder looked at again (a chunk costs one look at the folder, not three).
    func write(_ name: String, offset: Int64, bytes: ByteBuffer, persistent: Bool) -> WriteResult {
        if name == "." || name == ".." || name.isEmpty { return .failed }
        let target = path(name)
        return state.withLock { state -> WriteResult in
            let stamp = folderStamp()
            let valid = state.cachedUsed != nil && stamp == state.cachedStamp
            let before = size(atPath: target)
            if offset != 0 {
                guard let before, before == offset else { return .offsetMismatch }
            }
            let fd = open(target, O_WRONLY | O_CLOEXEC | (offset == 0 ? O_CREAT | O_TRUNC : 0), 0o644)
            guard fd >= 0 else { return .failed }
            let written = bytes.withUnsafeReadableBytes { raw -> Bool in
                var done = 0
                while done < raw.count {
                    let n = pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(offset) + off_t(done))
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { return false }
                    done += n
                }
                return true
            }
            var info = stat()
            let after: Int64? = fstat(fd, &info) == 0 ? Int64(info.st_size) : nil
            close(fd)
            if valid, let used = state.cachedUsed, let after {
                state.cachedUsed = used - (before ?? 0) + after
                state.cachedStamp = before == nil ? folderStamp() : stamp
            } else {
                state.cachedUsed = nil
            }
            guard written else { return .failed }
            if persistent { state.volatileNames.remove(name) } else { state.volatileNames.insert(name) }
            return .ok
        }
    }

    func delete(_ name: String) -> Bool {
        guard exists(name) else { return false }
        return state.withLock { state in
            tracking(name, &state) { state in
                state.volatileNames.remove(name)
                return (try? FileManager.default.removeItem(atPath: path(name))) != nil
            }
        }
    }

    /// "Ignition off": non-persistent files uploaded since start are lost.
    func dropVolatile() -> [String] {
        state.withLock { state in
            let gone = state.volatileNames.sorted()
            for name in gone { try? FileManager.default.removeItem(atPath: path(name)) }
            state.volatileNames.removeAll()
            state.cachedUsed = nil
            return gone
        }
    }
}
