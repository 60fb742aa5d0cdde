import Foundation
import Synchronization

/// Tells listeners in this process that the ledger committed a change to what `status` reads (a file's outcome,
/// a retry, a forget; not the byte progress of an upload). Each listener holds at most one signal not yet taken,
/// so however many commits happen while it is busy, it learns of them once.
final class CommitSignal: Sendable {
    private let listeners = Mutex<[UUID: AsyncStream<Void>.Continuation]>([:])

    func fire() {
        let all = listeners.withLock { Array($0.values) }
        for listener in all { listener.yield() }
    }

    func subscribe() -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        listeners.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.listeners.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }
}
