import Foundation

/// Cancels the rest of a multi-file transfer: no new file or retry starts once cancelled; transfers in flight end
/// (or are cancelled by the caller's task cancellation).
public final class CancellationHandle: @unchecked Sendable {
    private let lock = NSLock()
    private var cancelled = false

    public init() {}

    public func cancel() {
        lock.lock()
        cancelled = true
        lock.unlock()
    }

    public var isCancelled: Bool {
        lock.lock()
        defer { lock.unlock() }
        return cancelled
    }
}
