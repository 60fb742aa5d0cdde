import NIOCore
import Synchronization

/// What one event stream has yet to write: at most `capacity` bytes of batches, the oldest dropped beyond that (a
/// client that reads too slowly, or not at all, never slows the deliveries nor grows the gateway's memory: dropping
/// costs the same whatever the backlog's size). The batches are the broadcast's own buffers, encoded once and
/// shared by every stream (``EventBroadcast``); each says how many events it holds, so that what a stream loses is
/// counted in events. Its writer takes everything waiting at once (``takeAll()``).
final class EventBacklog: Sendable {
    /// Messages encoded together: the bytes, and the events they hold (0 for a heartbeat).
    struct Batch: Sendable {
        var bytes: ByteBuffer
        var events: Int
    }

    /// What waits, and how many events older batches held that were dropped since the last take.
    struct Taken: Sendable {
        var batches: [ByteBuffer]
        var dropped: Int
    }

    private struct State: ~Copyable {
        var batches = CircularBuffer<Batch>(initialCapacity: 16)
        var bytes = 0
        var dropped = 0
        var finished = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    let capacity: Int
    private let state = Mutex(State())

    /// `capacity`: the bytes of batches held at most (one batch is always held, however long).
    init(capacity: Int) { self.capacity = capacity }

    /// Adds a batch (nothing once finished); never waits.
    func append(_ batch: Batch) {
        let waiting: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard !state.finished else { return nil }
            state.batches.append(batch)
            state.bytes += batch.bytes.readableBytes
            while state.bytes > capacity, state.batches.count > 1 {
                let oldest = state.batches.removeFirst()
                state.bytes -= oldest.bytes.readableBytes
                state.dropped += oldest.events
            }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiting?.resume()
    }

    /// Adds one message of its own (a heartbeat: no event).
    func append(_ message: String, events: Int = 0) {
        append(Batch(bytes: ByteBuffer(string: message), events: events))
    }

    /// No more batches: the writer gets what is waiting, then nil.
    func finish() {
        let waiting: CheckedContinuation<Void, Never>? = state.withLock { state in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiting?.resume()
    }

    /// Bytes held now.
    var heldBytes: Int { state.withLock { $0.bytes } }

    /// Everything waiting, in order, and how many events were dropped since the last take; waits while nothing
    /// waits. Nil once finished and empty, or when the calling task is cancelled.
    func takeAll() async -> Taken? {
        while true {
            if Task.isCancelled { return nil }
            let taken: Taken?? = state.withLock { state in
                if !state.batches.isEmpty {
                    defer {
                        state.batches.removeAll(keepingCapacity: true)
                        state.bytes = 0
                        state.dropped = 0
                    }
                    return Taken(batches: state.batches.map(\.bytes), dropped: state.dropped)
                }
                return state.finished ? .some(nil) : nil
            }
            if let taken { return taken }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if !state.batches.isEmpty || state.finished || Task.isCancelled { return true }
                        state.waiter = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onCancel: {
                let waiting: CheckedContinuation<Void, Never>? = state.withLock { state in
                    defer { state.waiter = nil }
                    return state.waiter
                }
                waiting?.resume()
            }
        }
    }
}
