import Foundation

/// Progress figures seen by a callback (thread-safe).
final class S3ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Int64] = []
    func add(_ value: Int64) {
        lock.lock()
        values.append(value)
        lock.unlock()
    }
    var last: Int64? {
        lock.lock()
        defer { lock.unlock() }
        return values.last
    }
    var max: Int64 {
        lock.lock()
        defer { lock.unlock() }
        return values.max() ?? 0
    }
}
