import NIOCore
import Synchronization
import SyncgateCore

/// One subscription to the gateway's events and ledger commits for every open event stream. Each event is turned
/// into its SSE message once, into the batch being filled; a batch is sealed at most every ``spacing`` (at once for
/// the first event after a quiet spell) or at ``maxBatch`` bytes, and the same buffer is handed to every stream's
/// ``EventBacklog`` (bounded; a stream that falls behind loses its oldest batches and is told how many events they
/// held). So an event costs the same whatever the number of streams, and a stream gets at most a few batches a
/// second however busy the gateway; handing over never waits for a client. The subscription starts with the first
/// stream and ends with the last; when the gateway's events end (it stops, or a reload replaces it), every open
/// stream ends.
final class EventBroadcast: Sendable {
    private struct State: ~Copyable {
        var streams: [ObjectIdentifier: EventBacklog] = [:]
        /// Whether a pump runs (or is being started), and which one: a pump of an older round stays silent.
        var pumping = false
        var round = 0
        var pump: Task<Void, Never>?
        /// The batch being filled, the events in it, when the last was sealed, and whether a seal is scheduled.
        var pending = ByteBuffer()
        var pendingEvents = 0
        var lastSeal: ContinuousClock.Instant?
        var sealScheduled = false

        /// Seals the pending batch and hands it to every stream (in order: under the broadcast's lock).
        mutating func seal(at now: ContinuousClock.Instant) {
            lastSeal = now
            guard pendingEvents > 0 else { return }
            let batch = EventBacklog.Batch(bytes: pending, events: pendingEvents)
            pending = ByteBuffer()
            pendingEvents = 0
            for stream in streams.values { stream.append(batch) }
        }
    }

    /// The least time between two batches.
    static let spacing = Duration.milliseconds(100)
    /// A batch is sealed at this size even before ``spacing`` is over (a backlog then always holds several).
    static let maxBatch = 64 << 10

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
            state.pending.clear()
            state.pendingEvents = 0
            defer { state.pump = nil }
            return state.pump
        }
        stop?.cancel()
    }

    /// Streams open now.
    var openStreams: Int { state.withLock { $0.streams.count } }

    /// Puts one message (one event) in the pending batch; seals it now, or schedules its seal.
    private func send(_ message: String, round: Int) {
        let sealIn: Duration? = state.withLock { state in
            guard state.round == round else { return nil }
            state.pending.writeString(message)
            state.pendingEvents += 1
            let now = ContinuousClock.now
            let since = state.lastSeal.map { now - $0 }
            if state.pending.readableBytes >= EventBroadcast.maxBatch || (!state.sealScheduled && since.map { $0 >= EventBroadcast.spacing } ?? true) {
                state.seal(at: now)
                return nil
            }
            guard !state.sealScheduled, let since else { return nil }
            state.sealScheduled = true
            return EventBroadcast.spacing - since
        }
        if let sealIn {
            Task {
                try? await Task.sleep(for: sealIn)
                state.withLock { state in
                    state.sealScheduled = false
                    if state.round == round { state.seal(at: .now) }
                }
            }
        }
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
            state.seal(at: .now)
            state.pumping = false
            state.round += 1
            state.pump = nil
            defer { state.streams.removeAll() }
            return Array(state.streams.values)
        }
        for stream in ended { stream.finish() }
    }
}
