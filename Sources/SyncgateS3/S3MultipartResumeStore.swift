import Foundation
import SyncgateCore
import Synchronization

/// Multipart uploads that can be resumed, so that the next attempt at the same file sends only the parts still
/// missing: in memory for the attempts of this run, and, once the destination has the ledger's ``ResumeStore``
/// (``S3Destination/useResumeStore(_:)``), in the ledger as well, written when the upload is created and after
/// each finished part, so that a later run (after a crash, a kill -9, a lost network) picks it up. An upload is
/// resumed only for the same bytes (size, SHA-256) and part size.
///
/// Without a ledger (a library user) whatever is kept when the destination finishes is aborted; with one it stays
/// for the next run, and uploads left for longer than `abort_incomplete_after` are aborted then
/// (``S3Destination/abortStaleUploads()``). Uploads that must not be resumed are aborted when it finishes either way.
final class S3MultipartResumeStore: Sendable {
    struct Pending: Sendable, Codable {
        var uploadID: String
        var size: Int64
        var partSize: Int64
        var sha256: String
        /// ETags of the parts the server acknowledged, by part number.
        var etags: [Int: String]

        enum CodingKeys: String, CodingKey {
            case uploadID = "upload_id", size, partSize = "part_size", sha256, etags = "parts"
        }
    }

    private struct State {
        var pending: [String: Pending] = [:]
        /// Uploads whose abort did not go through (cancelled, or failed): only to be aborted.
        var abandoned: [(key: String, uploadID: String)] = []
        var ledger: ResumeStore?
    }

    private let state = Mutex(State())
    private let logger: @Sendable (String) -> Void

    init(logger: @escaping @Sendable (String) -> Void = { _ in }) {
        self.logger = logger
    }

    /// Keeps uploads in the ledger from now on.
    func use(_ store: ResumeStore) {
        state.withLock { $0.ledger = store }
    }

    var persists: Bool { state.withLock { $0.ledger != nil } }

    /// Removes and returns what was kept for `key`: from this run's attempts, else from the ledger (`fromLedger`:
    /// its parts must then be checked against the server's list before they count).
    func take(_ key: String) -> (upload: Pending, fromLedger: Bool)? {
        let (kept, store) = state.withLock { ($0.pending.removeValue(forKey: key), $0.ledger) }
        if let kept { return (kept, false) }
        guard let store else { return nil }
        do {
            guard let text = try store.load(key) else { return nil }
            return (try JSONDecoder().decode(Pending.self, from: Data(text.utf8)), true)
        } catch {
            logger("the ledger's record of an interrupted upload of \(key) cannot be read (\(error)); it starts afresh")
            try? store.remove(key)
            return nil
        }
    }

    /// Keeps an upload for the next attempt in this run (the ledger has it already: ``record(_:_:)`` wrote it when
    /// it was created and after each part).
    func keep(_ key: String, _ upload: Pending) {
        state.withLock { $0.pending[key] = upload }
    }

    /// Writes the upload's progress to the ledger (no-op without one). A failure is logged: the upload goes on, and
    /// a later run resends what the ledger does not name.
    func record(_ key: String, _ upload: Pending) {
        guard let store = state.withLock({ $0.ledger }) else { return }
        do {
            let data = try JSONEncoder().encode(upload)
            try store.save(key, String(decoding: data, as: UTF8.self))
        } catch {
            logger("cannot record the progress of the multipart upload of \(key) in the ledger: \(error)")
        }
    }

    /// The upload of `key` is over (completed or aborted): nothing to resume.
    func forget(_ key: String) {
        let store = state.withLock { state -> ResumeStore? in
            state.pending.removeValue(forKey: key)
            return state.ledger
        }
        try? store?.remove(key)
    }

    /// What the ledger keeps, with when it was last written.
    func recorded() -> [(key: String, upload: Pending?, updatedAt: Date)] {
        guard let store = state.withLock({ $0.ledger }), let entries = try? store.all() else { return [] }
        return entries.map { ($0.name, try? JSONDecoder().decode(Pending.self, from: Data($0.value.utf8)), $0.updatedAt) }
    }

    /// Keeps an upload that must not be resumed, for ``drain()`` to return.
    func abandon(_ key: String, uploadID: String) {
        state.withLock { $0.abandoned.append((key, uploadID)) }
    }

    /// Removes and returns what the destination aborts when it finishes: the abandoned uploads, and, without a
    /// ledger to keep them for a later run, the resumable ones too.
    func drain() -> [(key: String, uploadID: String)] {
        state.withLock { state in
            var all = state.abandoned
            if state.ledger == nil { all += state.pending.map { (key: $0.key, uploadID: $0.value.uploadID) } }
            state.pending.removeAll()
            state.abandoned.removeAll()
            return all
        }
    }
}
