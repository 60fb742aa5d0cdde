import Foundation

/// Multipart uploads that failed with a retryable error, kept (per destination, in memory) so that the next
/// attempt at the same file sends only the parts still missing. An upload is resumed only for the same bytes
/// (size, SHA-256) and part size; whatever is left when the destination finishes is aborted, with the uploads whose
/// abort did not go through earlier.
final class S3MultipartResumeStore: @unchecked Sendable {
    struct Pending: Sendable {
        var uploadID: String
        var size: Int64
        var partSize: Int64
        var sha256: String
        /// ETags of the parts the server acknowledged, by part number.
        var etags: [Int: String]
    }

    private let lock = NSLock()
    private var pending: [String: Pending] = [:]
    /// Uploads whose abort did not go through (cancelled, or failed): only to be aborted.
    private var abandoned: [(key: String, uploadID: String)] = []

    /// Removes and returns what was kept for `key`.
    func take(_ key: String) -> Pending? {
        lock.withLock { pending.removeValue(forKey: key) }
    }

    func keep(_ key: String, _ upload: Pending) {
        lock.withLock { pending[key] = upload }
    }

    /// Keeps an upload that must not be resumed, for ``drain()`` to return.
    func abandon(_ key: String, uploadID: String) {
        lock.withLock { abandoned.append((key, uploadID)) }
    }

    /// Removes and returns everything kept and abandoned.
    func drain() -> [(key: String, uploadID: String)] {
        lock.withLock {
            let all = pending.map { (key: $0.key, uploadID: $0.value.uploadID) } + abandoned
            pending.removeAll()
            abandoned.removeAll()
            return all
        }
    }
}
