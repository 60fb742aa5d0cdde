import Crypto
import Dispatch
import NIOCore
import Synchronization
import SyncgateCore

/// Takes the SHA-256 of a file's chunks on a queue of its own, in the order they are added, so that hashing a file
/// overlaps with sending it (the CRC-32s, the frames, the socket) instead of adding to it. The sender waits, without
/// blocking a thread, while `backlog` chunks are still to be hashed: memory stays bounded.
final class ChunkHasher: Sendable {
    private let queue = DispatchQueue(label: "syncgate.headunit.sha256")
    /// Only touched on `queue` (the lock is never contended: it makes that checked).
    private let hasher = Mutex(SHA256())
    private let waiting = Atomic<Int>(0)
    let backlog: Int

    init(backlog: Int) {
        self.backlog = max(1, backlog)
    }

    /// Queues the next chunks, in order, as one piece of work for the queue (one wake-up of its thread for a batch).
    /// A `ByteBuffer` shares its bytes: they are not copied.
    func add(_ chunks: [ByteBuffer]) async {
        guard !chunks.isEmpty else { return }
        if waiting.load(ordering: .acquiring) >= backlog { await drain() }
        waiting.add(chunks.count, ordering: .relaxed)
        queue.async { [self] in
            hasher.withLock { hasher in
                for chunk in chunks { chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) } }
            }
            waiting.subtract(chunks.count, ordering: .releasing)
        }
    }

    /// Waits until every chunk added so far is hashed.
    private func drain() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.async { done.resume() } }
    }

    /// The hash of every chunk added, as lowercase hex (taken on the queue once the chunks before it are hashed).
    func finalize() async -> String {
        await withCheckedContinuation { (done: CheckedContinuation<String, Never>) in
            queue.async { [self] in done.resume(returning: FileHasher.hex(hasher.withLock { $0.finalize() })) }
        }
    }
}
