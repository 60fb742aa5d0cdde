import Foundation

/// What one event stream has yet to write: at most `capacity` messages, the oldest dropped beyond that (a client
/// that reads too slowly never slows the deliveries nor grows the gateway's memory). Its writer takes everything
/// waiting at once (``takeAll()``), so that a burst of events is written in a few large writes instead of one
/// socket write each, which is what let a client fall behind by thousands of events in a burst.
final class EventBacklog: @unchecked Sendable {
    let capacity: Int
    private let lock = NSLock()
    private var messages: [String] = []
    private var dropped = 0
    private var finished = false
    private var waiter: CheckedContinuation<Void, Never>?

    init(capacity: Int) { self.capacity = capacity }

    /// Adds a message (nothing once finished).
    func append(_ message: String) {
        let waiting: CheckedContinuation<Void, Never>? = lock.withLock {
            guard !finished else { return nil }
            messages.append(message)
            if messages.count > capacity {
                let over = messages.count - capacity
                messages.removeFirst(over)
                dropped += over
            }
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume()
    }

    /// No more messages: the writer gets what is waiting, then nil.
    func finish() {
        let waiting: CheckedContinuation<Void, Never>? = lock.withLock {
            finished = true
            defer { waiter = nil }
            return waiter
        }
        waiting?.resume()
    }

    /// Everything waiting, in order, and how many older messages were dropped since the last take; waits while
    /// nothing waits. Nil once finished and empty, or when the calling task is cancelled.
    func takeAll() async -> (messages: [String], dropped: Int)? {
        while true {
            if Task.isCancelled { return nil }
            let taken: (messages: [String], dropped: Int)?? = lock.withLock {
                if !messages.isEmpty {
                    defer {
                        messages.removeAll(keepingCapacity: true)
                        dropped = 0
                    }
                    return (messages, dropped)
                }
                return finished ? .some(nil) : nil
            }
            if let taken { return taken }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = lock.withLock { () -> Bool in
                        if !messages.isEmpty || finished || Task.isCancelled { return true }
                        waiter = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            } onCancel: {
                let waiting: CheckedContinuation<Void, Never>? = lock.withLock {
                    defer { waiter = nil }
                    return waiter
                }
                waiting?.resume()
            }
        }
    }
}
