import Foundation

/// Where the watcher's thread leaves what it found until the consumer of ``SourceWatcher/events`` asks for it:
/// files ready (a set, so a file that falls due twice before the consumer asks is reported once) and the reasons
/// of rescans asked for. It holds at most `limit` files; beyond that it keeps one rescan instead, so a consumer
/// that falls behind costs no memory and loses nothing.
final class WatchOutbox: @unchecked Sendable {
    private let lock = NSLock()
    private var files: Set<FileKey> = []
    private var removed: Set<FileKey> = []
    private var reasons: [String] = []
    private var finished = false
    private var waiters: [CheckedContinuation<WatchEvent?, Never>] = []
    let limit: Int

    /// At most this many distinct reasons are kept for one rescan (the rest are in the log).
    private static let maxReasons = 8

    init(limit: Int) {
        self.limit = limit
    }

    /// Files that settled. Dropped while a rescan waits: the walk that follows it finds them.
    func add(_ keys: [FileKey]) { add(keys, to: \.files, what: "files") }

    /// Files deleted or renamed away. Dropped while a rescan waits, as files are.
    func addRemoved(_ keys: [FileKey]) { add(keys, to: \.removed, what: "removed files") }

    private func add(_ keys: [FileKey], to set: ReferenceWritableKeyPath<WatchOutbox, Set<FileKey>>, what: String) {
        guard !keys.isEmpty else { return }
        lock.withLock {
            guard !finished, reasons.isEmpty else { return }
            self[keyPath: set].formUnion(keys)
            if self[keyPath: set].count > limit {
                self[keyPath: set] = []
                reasons.append("more than \(limit) \(what) waited to be planned")
            }
            deliverLocked()
        }
    }

    /// Asks for a rescan: it supersedes the files waiting.
    func rescan(_ reason: String) {
        lock.withLock {
            guard !finished else { return }
            files = []
            removed = []
            if !reasons.contains(reason) && reasons.count < WatchOutbox.maxReasons { reasons.append(reason) }
            deliverLocked()
        }
    }

    /// No more events: a consumer waiting (now or later) gets nil.
    func finish() {
        let waiting: [CheckedContinuation<WatchEvent?, Never>] = lock.withLock {
            finished = true
            files = []
            removed = []
            reasons = []
            defer { waiters = [] }
            return waiters
        }
        for waiter in waiting { waiter.resume(returning: nil) }
    }

    var isFinished: Bool { lock.withLock { finished } }

    /// Files ready and not yet handed over.
    var count: Int { lock.withLock { files.count } }

    /// The next event, waiting for one; nil once finished. Cancelling the waiting task finishes the outbox.
    func next() async -> WatchEvent? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<WatchEvent?, Never>) in
                lock.withLock {
                    if let event = takeLocked() {
                        waiter.resume(returning: event)
                    } else if finished {
                        waiter.resume(returning: nil)
                    } else {
                        waiters.append(waiter)
                    }
                }
            }
        } onCancel: {
            finish()
        }
    }

    private func takeLocked() -> WatchEvent? {
        if !reasons.isEmpty {
            defer {
                reasons = []
                files = []
                removed = []
            }
            return .rescan(reason: reasons.joined(separator: "; "))
        }
        if !removed.isEmpty {
            defer { removed = [] }
            return .removed(removed.sorted())
        }
        guard !files.isEmpty else { return nil }
        defer { files = [] }
        return .files(files.sorted())
    }

    private func deliverLocked() {
        while !waiters.isEmpty, let event = takeLocked() {
            waiters.removeFirst().resume(returning: event)
        }
    }
}
