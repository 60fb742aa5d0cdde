import Synchronization

/// Sums the progress of parts in flight into one cumulative figure for the file.
final class S3ProgressCounter: Sendable {
    /// Bytes per part in flight, and their sum.
    private let parts = Mutex<(perPart: [Int: Int64], sum: Int64)>(([:], 0))
    private let total: @Sendable (Int64) -> Void

    init(total: @escaping @Sendable (Int64) -> Void) { self.total = total }

    func set(part: Int, bytes: Int64) {
        let value = parts.withLock { parts in
            parts.sum += bytes - (parts.perPart[part] ?? 0)
            parts.perPart[part] = bytes
            return parts.sum
        }
        total(value)
    }
}
