import Foundation
import Synchronization

/// Hands every delivery event of a gateway to whoever listens (the status page's event stream), each listener with
/// a bounded buffer: one that does not keep up loses the oldest events, never slows the deliveries.
final class EventHub: Sendable {
    private let listeners = Mutex<[UUID: AsyncStream<DeliveryEvent>.Continuation]>([:])
    /// Events held per listener that has not read them.
    static let buffer = 10_000

    func publish(_ event: DeliveryEvent) {
        let all = listeners.withLock { Array($0.values) }
        for listener in all { listener.yield(event) }
    }

    func subscribe() -> AsyncStream<DeliveryEvent> {
        let (stream, continuation) = AsyncStream<DeliveryEvent>.makeStream(bufferingPolicy: .bufferingNewest(EventHub.buffer))
        let id = UUID()
        listeners.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.listeners.withLock { $0.removeValue(forKey: id) }
        }
        return stream
    }

    /// Ends every stream (the gateway stops).
    func close() {
        let all = listeners.withLock { listeners in
            defer { listeners.removeAll() }
            return Array(listeners.values)
        }
        for listener in all { listener.finish() }
    }
}
