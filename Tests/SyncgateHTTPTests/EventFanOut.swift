import Foundation
import SyncgateCore

/// Hands every event of the test gateway's passes to each subscriber of ``TestGateway/events()``, and counts the
/// subscribers, so that a test sees a stream end when its HTTP client goes.
final class EventFanOut: @unchecked Sendable {
    private let lock = NSLock()
    private var subscribers: [UUID: AsyncStream<DeliveryEvent>.Continuation] = [:]
    private var sent = 0

    func subscribe() -> AsyncStream<DeliveryEvent> {
        let (stream, continuation) = AsyncStream<DeliveryEvent>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        let id = UUID()
        lock.withLock { subscribers[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.lock.withLock { self.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    func send(_ event: DeliveryEvent) {
        let all = lock.withLock { () -> [AsyncStream<DeliveryEvent>.Continuation] in
            sent += 1
            return Array(subscribers.values)
        }
        for continuation in all { continuation.yield(event) }
    }

    /// Events sent so far.
    var sentCount: Int { lock.withLock { sent } }

    /// Ends every stream (the gateway stops).
    func finish() {
        for continuation in lock.withLock({ Array(subscribers.values) }) { continuation.finish() }
    }

    var subscriberCount: Int { lock.withLock { subscribers.count } }
}
