import Synchronization
import SyncgateCore

/// One subscription to the gateway's events and ledger commits for every open event stream: each event is turned
/// into its SSE message once and the same string is handed to every stream's ``EventBacklog`` (bounded; a stream
/// that falls behind loses its oldest messages and is told how many). Handing over never waits for a client, so 64
/// streams, reading or not, cost the deliveries little more than one. The subscription starts with the first stream
/// and ends with the last; when the gateway's events end (it stops, or a reload replaces it), every open stream ends.
final class EventBroadcast: Sendable {
    private struct State: ~Copyable {
        var streams: [ObjectIdentifier: EventBacklog] = [:]
        /// Whether a pump runs (or is being started), and which one: a pump of an older round stays silent.
        var pumping = false
        var round = 0
        var pump: Task<Void, Never>?
    }

    let gateway: any GatewayObservable
    /// Bytes held per stream at most (``EventBacklog``).
    let capacity: Int
    private let state = Mutex(State())

    init(gateway: any GatewayObservable, capacity: Int) {
        self.gateway = gateway
        self.capacity = capacity
    }

    /// A new stream's backlog: every event from now on, until ``close(_:)`` or the gateway's events end.
    func open() -> EventBacklog {
        let backlog = EventBacklog(capacity: capacity)
        let round: Int? = state.withLock { state in
            state.streams[ObjectIdentifier(backlog)] = backlog
            guard !state.pumping else { return nil }
            state.pumping = true
            state.round += 1
            return state.round
        }
        if let round {
            // Subscribed before this returns: nothing published after the stream opened is missed.
            let events = gateway.events(), recorded = gateway.recorded()
            let task = Task { await self.pump(events: events, recorded: recorded, round: round) }
            let stale = state.withLock { state -> Bool in
                guard state.pumping, state.round == round else { return true }
                state.pump = task
                return false
            }
            if stale { task.cancel() }
        }
        return backlog
    }

    /// A stream is gone; the subscription ends with the last one.
    func close(_ backlog: EventBacklog) {
        backlog.finish()
        let stop: Task<Void, Never>? = state.withLock { state in
            state.streams[ObjectIdentifier(backlog)] = nil
            guard state.streams.isEmpty, state.pumping else { return nil }
            state.pumping = false
            state.round += 1
            defer { state.pump = nil }
            return state.pump
        }
        stop?.cancel()
    }

    /// Streams open now.
    var openStreams: Int { state.withLock { $0.streams.count } }

    private func send(_ message: String, round: Int) {
        let streams = state.withLock { state in state.round == round ? Array(state.streams.values) : [] }
        for stream in streams { stream.append(message) }
    }

    private func pump(events: AsyncStream<DeliveryEvent>, recorded: AsyncStream<Void>, round: Int) async {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await event in events { self.send(EventStream.chunk(event), round: round) }
                return true
            }
            group.addTask {
                // Commits close together become one notice: the signal holds one, and this waits between two.
                for await _ in recorded {
                    self.send(EventStream.recordedChunk, round: round)
                    try? await Task.sleep(for: EventStream.recordedSpacing)
                }
                return false
            }
            while let eventsEnded = await group.next() {
                if eventsEnded { break }
            }
            group.cancelAll()
        }
        // The gateway's events ended (not this pump's cancellation by the last stream's close): its streams end.
        let ended: [EventBacklog] = state.withLock { state in
            guard state.pumping, state.round == round else { return [] }
            state.pumping = false
            state.round += 1
            state.pump = nil
            defer { state.streams.removeAll() }
            return Array(state.streams.values)
        }
        for stream in ended { stream.finish() }
    }
}
