import Synchronization

/// With `existing: check`, what the bucket holds in the folders of the files a run is about to send, read with one
/// ListObjectsV2 per folder (paged) instead of a HEAD per file: a runner that starts with an empty ledger finds what
/// an earlier runner delivered without sending it again. Good for one pass (``reset()`` at the next).
final class S3ExistingObjects: Sendable {
    private struct State {
        /// Folder prefixes (ending in "/", or "" for the top) listed in this pass.
        var listed: Set<String> = []
        var objects: [String: S3Listing.Object] = [:]
    }

    private let state = Mutex(State())

    /// The folder part of a key: everything up to and including its last "/".
    static func folder(of key: String) -> String {
        guard let slash = key.lastIndex(of: "/") else { return "" }
        return String(key[...slash])
    }

    /// Folders of `keys` not listed yet in this pass.
    func unlisted(_ keys: [String]) -> Set<String> {
        let folders = Set(keys.map(S3ExistingObjects.folder(of:)))
        return state.withLock { folders.subtracting($0.listed) }
    }

    func record(folder: String, objects found: [S3Listing.Object]) {
        state.withLock { state in
            state.listed.insert(folder)
            for object in found { state.objects[object.name] = object }
        }
    }

    enum Answer {
        /// The folder was not listed: ask the server (HEAD).
        case unknown
        case absent
        case present(S3Listing.Object)
    }

    func lookup(_ key: String) -> Answer {
        state.withLock { state in
            guard state.listed.contains(S3ExistingObjects.folder(of: key)) else { return .unknown }
            return state.objects[key].map { .present($0) } ?? .absent
        }
    }

    func reset() {
        state.withLock { state in
            state.listed.removeAll()
            state.objects.removeAll()
        }
    }
}
