import Foundation
import SyncgateCore

/// A destination for the page tests whose uploads take their time: it copies each file into a folder in twenty
/// steps, reporting each step's bytes, and holds a file whose name contains `holdMarker` once half of it is sent until
/// ``release()``. The engine, ledger and events around it are the real ones; it only lets a test see an upload
/// in flight.
final class PacedDestination: Destination, @unchecked Sendable {
    let holdMarker: String
    private let lock = NSLock()
    private var released = false
    private var holding: Set<String> = []
    private var root: URL?

    init(holdMarker: String) {
        self.holdMarker = holdMarker
    }

    /// Its folder (the config's `path`, set when the config is loaded).
    var folder: URL { lock.withLock { root ?? URL(fileURLWithPath: "/nonexistent") } }

    struct Settings: Decodable { var path: String }

    /// The plugin `paced` (key `path`), handing out `destination` (made by the test, which keeps it to release).
    static func registration(_ destination: PacedDestination) -> PluginRegistration {
        PluginRegistration(type: "paced", summary: "a folder written slowly (tests)") { setup in
            let settings = try setup.decode(Settings.self)
            destination.lock.withLock { destination.root = setup.baseDirectory.appendingPathComponent(settings.path) }
            return destination
        }
    }

    /// Lets held uploads go on.
    func release() { lock.withLock { released = true } }

    /// The files held now.
    var held: Set<String> { lock.withLock { holding } }

    func upload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt {
        let data = try Data(contentsOf: URL(fileURLWithPath: item.absolutePath))
        let step = max(1, data.count / 20)
        var sent = 0
        while sent < data.count {
            sent = min(data.count, sent + step)
            progress(Int64(sent))
            try await Task.sleep(for: .milliseconds(20))
            if item.relativePath.contains(holdMarker), sent * 2 >= data.count, !lock.withLock({ released }) {
                lock.withLock { _ = holding.insert(item.relativePath) }
                defer { lock.withLock { _ = holding.remove(item.relativePath) } }
                while !lock.withLock({ released }) {
                    progress(Int64(sent))  // the same bytes again, so that the last step is what observers see
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
        }
        let target = folder.appendingPathComponent(item.remoteName)
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: target, options: .atomic)
        return Receipt(remoteName: item.remoteName)
    }

    func delete(remoteName: String) async throws {
        try FileManager.default.removeItem(at: folder.appendingPathComponent(remoteName))
    }

    func list() async throws -> RemoteListing {
        RemoteListing(entries: [])
    }
}
