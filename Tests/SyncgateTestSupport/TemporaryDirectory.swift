import Foundation
import Synchronization

/// Every folder made by this process; whatever is left of them is removed when the process exits, so that a test
/// that fails (or forgets) before its own clean-up leaves nothing under the temporary folder.
private let madeFolders = Mutex<[URL]>([])
private let removeLeftFoldersAtExit: Void = {
    atexit {
        for url in madeFolders.withLock({ $0 }) { try? FileManager.default.removeItem(at: url) }
    }
}()

/// A fresh folder under the system's temporary folder, removed by ``remove()`` (or at the latest when the test
/// process exits).
public struct TemporaryDirectory: Sendable {
    public let url: URL
    public var path: String { url.path }

    public init(_ prefix: String = "syncgate-test") throws {
        let base = URL(fileURLWithPath: NSTemporaryDirectory())
        url = base.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        _ = removeLeftFoldersAtExit
        madeFolders.withLock { [url] in $0.append(url) }
    }

    public func file(_ relative: String) -> URL { url.appendingPathComponent(relative) }

    /// Writes a file (creating folders) and returns its URL.
    @discardableResult
    public func write(_ relative: String, _ contents: String) throws -> URL {
        try write(relative, Data(contents.utf8))
    }

    @discardableResult
    public func write(_ relative: String, _ data: Data) throws -> URL {
        let target = file(relative)
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: target)
        return target
    }

    public func read(_ relative: String) throws -> Data { try Data(contentsOf: file(relative)) }

    public func exists(_ relative: String) -> Bool { FileManager.default.fileExists(atPath: file(relative).path) }

    public func remove() { try? FileManager.default.removeItem(at: url) }
}
