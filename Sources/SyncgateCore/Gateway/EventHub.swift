import Foundation

/// Hands every delivery event of a gateway to whoever listens (the status page's event stream), each listener with
/// a bounded buffer: one that does not keep up loses the oldest events, never slows the deliveries.
final class EventHub: @unchecked Sendable {
    private let lock = NSLock()
    private var listeners: [UUID: AsyncStream<DeliveryEvent>.Continuation] = [:]
    /// Events held per listener that has not read them.
    static let buffer = 10_000

    func publish(_ event: DeliveryEvent) {
        let all = lock.withLock { Array(listeners.values) }
        for listener in all { listener.yield(event) }
    }

    func subscribe() -> AsyncStream<DeliveryEvent> {
        let (stream, continuation) = AsyncStream<DeliveryEvent>.makeStream(bufferingPolicy: .bufferingNewest(EventHub.buffer))
        let id = UUID()
        lock.withLock { listeners[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.lock.withLock { self.listeners.removeValue(forKey: id) }
        }
        return stream
    }

    /// Ends every stream (the gateway stops).
    func close() {
        let all = lock.withLock {
            defer { listeners.removeAll() }
            return Array(listeners.values)
        }
        for listener in all { listener.finish() }
    }
}
