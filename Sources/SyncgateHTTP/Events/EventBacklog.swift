import NIOCore
import Synchronization

/// What one event stream has yet to write: at most `capacity` bytes of messages, the oldest dropped beyond that (a
/// client that reads too slowly, or not at all, never slows the deliveries nor grows the gateway's memory: dropping
/// costs the same whatever the backlog's size). The messages are the broadcast's own strings, shared by every stream.
/// Its writer takes everything waiting at once (``takeAll()``), so that a burst of events is written in a few large
/// writes instead of one socket write each.
final class EventBacklog: Sendable {
    /// What waits, and how many older messages were dropped since the last take.
    struct Batch: Sendable {
        var messages: [String]
        var dropped: Int
    }

    private struct State: ~Copyable {
        var messages = CircularBuffer<String>(initialCapacity: 64)
        var bytes = 0
        var dropped = 0
        var finished = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    let capacity: Int
    private let state = Mutex(State())

    /// `capacity`: the bytes of messages held at most (one message is always held, however long).
    init(capacity: Int) { self.capacity = capacity }

    /// Adds a message (nothing once finished); never waits.
    func append(_ message: String) {
        let waiting: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard !state.finished else { return nil }
            state.messages.append(message)
            state.bytes += message.utf8.count
            while state.bytes > capacity, state.messages.count > 1 {
                state.bytes -= state.messages.removeFirst().utf8.count
                state.dropped += 1
            }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiting?.resume()
    }

    /// No more messages: the writer gets what is waiting, then nil.
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

    /// Everything waiting, in order, and how many older messages were dropped since the last take; waits while
    /// nothing waits. Nil once finished and empty, or when the calling task is cancelled.
    func takeAll() async -> Batch? {
        while true {
            if Task.isCancelled { return nil }
            let taken: Batch?? = state.withLock { state in
                if !state.messages.isEmpty {
                    defer {
                        state.messages.removeAll(keepingCapacity: true)
                        state.bytes = 0
                        state.dropped = 0
                    }
                    return Batch(messages: Array(state.messages), dropped: state.dropped)
                }
                return state.finished ? .some(nil) : nil
            }
            if let taken { return taken }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if !state.messages.isEmpty || state.finished || Task.isCancelled { return true }
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
