import Foundation

/// Tells listeners in this process that the ledger committed a change to what `status` reads (a file's outcome,
/// a retry, a forget; not the byte progress of an upload). Each listener holds at most one signal not yet taken,
/// so however many commits happen while it is busy, it learns of them once.
final class CommitSignal: @unchecked Sendable {
    private let lock = NSLock()
    private var listeners: [UUID: AsyncStream<Void>.Continuation] = [:]

    func fire() {
        let all = lock.withLock { Array(listeners.values) }
        for listener in all { listener.yield() }
    }

    func subscribe() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        lock.withLock { listeners[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.lock.withLock { self.listeners.removeValue(forKey: id) }
        }
        return stream
    }
}
