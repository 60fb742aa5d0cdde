import Foundation

/// With `existing: check`, what the bucket holds in the folders of the files a run is about to send, read with one
/// ListObjectsV2 per folder (paged) instead of a HEAD per file: a runner that starts with an empty ledger finds what
/// an earlier runner delivered without sending it again. Good for one pass (``reset()`` at the next).
final class S3ExistingObjects: @unchecked Sendable {
    private let lock = NSLock()
    /// Folder prefixes (ending in "/", or "" for the top) listed in this pass.
    private var listed: Set<String> = []
    private var objects: [String: S3Listing.Object] = [:]
    /// Listing requests made (pages), for tests and the debug log.
    private(set) var pages = 0

    /// The folder part of a key: everything up to and including its last "/".
    static func folder(of key: String) -> String {
        guard let slash = key.lastIndex(of: "/") else { return "" }
        return String(key[...slash])
    }

    /// Folders of `keys` not listed yet in this pass.
    func unlisted(_ keys: [String]) -> Set<String> {
        let folders = Set(keys.map(S3ExistingObjects.folder(of:)))
        return lock.withLock { folders.subtracting(listed) }
    }

    func record(folder: String, objects found: [S3Listing.Object]) {
        lock.withLock {
            listed.insert(folder)
            for object in found { objects[object.name] = object }
        }
    }

    enum Answer {
        /// The folder was not listed: ask the server (HEAD).
        case unknown
        case absent
        case present(S3Listing.Object)
    }

    func lookup(_ key: String) -> Answer {
        lock.withLock {
            guard listed.contains(S3ExistingObjects.folder(of: key)) else { return .unknown }
            return objects[key].map { .present($0) } ?? .absent
        }
    }

    func reset() {
        lock.withLock {
            listed.removeAll()
            objects.removeAll()
        }
    }
}
