import Foundation

/// Sums the progress of parts in flight into one cumulative figure for the file.
final class S3ProgressCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var perPart: [Int: Int64] = [:]
    private var sum: Int64 = 0
    private let total: @Sendable (Int64) -> Void

    init(total: @escaping @Sendable (Int64) -> Void) { self.total = total }

    func set(part: Int, bytes: Int64) {
        lock.lock()
        sum += bytes - (perPart[part] ?? 0)
        perPart[part] = bytes
        let value = sum
        lock.unlock()
        total(value)
    }
}
