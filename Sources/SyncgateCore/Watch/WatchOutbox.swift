import Synchronization

/// Where the watcher's thread leaves what it found until the consumer of ``SourceWatcher/events`` asks for it:
/// files ready (a set, so a file that falls due twice before the consumer asks is reported once) and the reasons
/// of rescans asked for. It holds at most `limit` files; beyond that it keeps one rescan instead, so a consumer
/// that falls behind costs no memory and loses nothing.
final class WatchOutbox: Sendable {
    private struct State {
        var files: Set<FileKey> = []
        var removed: Set<FileKey> = []
        var reasons: [String] = []
        var finished = false
        var waiters: [CheckedContinuation<WatchEvent?, Never>] = []

        mutating func take() -> WatchEvent? {
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

        /// Hands events to the consumers waiting: their continuations with what each gets, to resume once the lock
        /// is released.
        mutating func deliver() -> [(CheckedContinuation<WatchEvent?, Never>, WatchEvent)] {
            var handed: [(CheckedContinuation<WatchEvent?, Never>, WatchEvent)] = []
            while !waiters.isEmpty, let event = take() {
                handed.append((waiters.removeFirst(), event))
            }
            return handed
        }
    }

    private let state = Mutex(State())
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

    private func add(_ keys: [FileKey], to set: WritableKeyPath<State, Set<FileKey>>, what: String) {
        guard !keys.isEmpty else { return }
        let limit = limit
        let handed = state.withLock { state -> [(CheckedContinuation<WatchEvent?, Never>, WatchEvent)] in
            guard !state.finished, state.reasons.isEmpty else { return [] }
            state[keyPath: set].formUnion(keys)
            if state[keyPath: set].count > limit {
                state[keyPath: set] = []
                state.reasons.append("more than \(limit) \(what) waited to be planned")
            }
            return state.deliver()
        }
        for (waiter, event) in handed { waiter.resume(returning: event) }
    }

    /// Asks for a rescan: it supersedes the files waiting.
    func rescan(_ reason: String) {
        let handed = state.withLock { state -> [(CheckedContinuation<WatchEvent?, Never>, WatchEvent)] in
            guard !state.finished else { return [] }
            state.files = []
            state.removed = []
            if !state.reasons.contains(reason) && state.reasons.count < WatchOutbox.maxReasons { state.reasons.append(reason) }
            return state.deliver()
        }
        for (waiter, event) in handed { waiter.resume(returning: event) }
    }

    /// No more events: a consumer waiting (now or later) gets nil.
    func finish() {
        let waiting: [CheckedContinuation<WatchEvent?, Never>] = state.withLock { state in
            state.finished = true
            state.files = []
            state.removed = []
            state.reasons = []
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiting { waiter.resume(returning: nil) }
    }

    var isFinished: Bool { state.withLock { $0.finished } }

    /// Files ready and not yet handed over.
    var count: Int { state.withLock { $0.files.count } }

    /// The next event, waiting for one; nil once finished. Cancelling the waiting task finishes the outbox.
    func next() async -> WatchEvent? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<WatchEvent?, Never>) in
                let now: WatchEvent?? = state.withLock { state in
                    if let event = state.take() { return .some(event) }
                    if state.finished { return .some(nil) }
                    state.waiters.append(waiter)
                    return nil
                }
                if let now { waiter.resume(returning: now) }
            }
        } onCancel: {
            finish()
        }
    }
}
