import Foundation

/// The head unit's file storage: one app's files as plain files in a folder, so tests compare bytes.
/// The folder is the truth: ListFiles reads it, so a test may delete a file to play "ignition off".
final class FileStore: @unchecked Sendable {
    let folder: URL
    let quota: Int64
    private let lock = NSLock()
    /// Names uploaded with persistentFile false during this simulator's life (lost at "ignition off").
    private var volatileNames: Set<String> = []

    init(folder: URL, quota: Int64) throws {
        self.folder = folder
        self.quota = quota
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    private func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

    /// Names of the stored files, sorted.
    func names() -> [String] {
        lock.withLock {
            let items = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            return items.filter { !$0.hasPrefix(".sim-") }.sorted()
        }
    }

    func size(of name: String) -> Int64? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path(name)),
            (attributes[.type] as? FileAttributeType) == .typeRegular
        else { return nil }
        return (attributes[.size] as? NSNumber)?.int64Value
    }

    func exists(_ name: String) -> Bool { size(of: name) != nil }

    func used() -> Int64 { names().reduce(0) { $0 + (size(of: $1) ?? 0) } }

    func spaceAvailable() -> Int64 { max(0, quota - used()) }

    enum WriteResult { case ok, offsetMismatch, failed }

    /// Writes `bytes` at `offset`: offset 0 replaces the file, any other offset must equal the stored size.
    func write(_ name: String, offset: Int64, bytes: [UInt8], persistent: Bool) -> WriteResult {
        if name == "." || name == ".." || name.isEmpty { return .failed }
        return lock.withLock {
            let target = path(name)
            if offset == 0 {
                guard FileManager.default.createFile(atPath: target, contents: Data(bytes)) else { return .failed }
            } else {
                guard let current = size(of: name), current == offset else { return .offsetMismatch }
                guard let handle = FileHandle(forWritingAtPath: target) else { return .failed }
                defer { try? handle.close() }
                do {
                    try handle.seek(toOffset: UInt64(offset))
                    try handle.write(contentsOf: bytes)
                } catch { return .failed }
            }
            if persistent { volatileNames.remove(name) } else { volatileNames.insert(name) }
            return .ok
        }
    }

    func delete(_ name: String) -> Bool {
        guard exists(name) else { return false }
        return lock.withLock {
            volatileNames.remove(name)
            return (try? FileManager.default.removeItem(atPath: path(name))) != nil
        }
    }

    /// "Ignition off": non-persistent files uploaded since start are lost.
    func dropVolatile() -> [String] {
        lock.withLock {
            let gone = volatileNames.sorted()
            for name in gone { try? FileManager.default.removeItem(atPath: path(name)) }
            volatileNames.removeAll()
            return gone
        }
    }
}
