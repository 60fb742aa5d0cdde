import Logging
import NIOCore
import Synchronization

/// Bounds the connections open at once to `limit`, well below the process's descriptors, so that idle or slow
/// clients can neither take every descriptor nor keep out the next client. When a connection comes and all places
/// are taken, the connection idle longest (no request under way: none sent yet, or waiting for the next one) is
/// closed to make room; when every connection has a request under way, the new one is closed at once. A flood of
/// idle connections thus churns through the places while a real request always gets in.
final class ConnectionLimiter: Sendable {
    private struct Entry {
        let channel: any Channel
        /// Since when it has had no request under way (nil: a request is being read or answered).
        var idleSince: NIODeadline?
    }

    private struct State: ~Copyable {
        var open: [ObjectIdentifier: Entry] = [:]
        var evicted = 0
        var refused = 0
        var lastWarning: NIODeadline?
    }

    let limit: Int
    private let logger: Logger
    private let state = Mutex(State())

    init(limit: Int, logger: Logger) {
        self.limit = limit
        self.logger = logger
    }

    /// Takes a place for a new connection (idle until its first request); false when it must be closed at once.
    func admit(_ channel: any Channel) -> Bool {
        let now = NIODeadline.now()
        let (admitted, victim, warn): (Bool, (any Channel)?, Bool) = state.withLock { state in
            let id = ObjectIdentifier(channel)
            if state.open[id] != nil { return (true, nil, false) }
            var victim: (any Channel)?
            if state.open.count >= limit {
                let oldest = state.open.filter { $0.value.idleSince != nil }.min { $0.value.idleSince! < $1.value.idleSince! }
                guard let oldest else {
                    state.refused += 1
                    return (false, nil, ConnectionLimiter.shouldWarn(&state, now: now))
                }
                state.open[oldest.key] = nil
                state.evicted += 1
                victim = oldest.value.channel
            }
            state.open[id] = Entry(channel: channel, idleSince: now)
            return (true, victim, victim != nil && ConnectionLimiter.shouldWarn(&state, now: now))
        }
        victim?.close(promise: nil)
        if warn {
            let (evicted, refused) = state.withLock { ($0.evicted, $0.refused) }
            logger.warning("HTTP connections at their limit (\(limit), http.max_connections): idle ones are closed to make room",
                           metadata: ["idle_closed": "\(evicted)", "refused": "\(refused)"])
        }
        return admitted
    }

    /// A request is under way on `channel`: it is not closed to make room.
    func busy(_ channel: any Channel) {
        state.withLock { state in state.open[ObjectIdentifier(channel)]?.idleSince = nil }
    }

    /// `channel` has answered everything it was asked and waits for the next request.
    func idle(_ channel: any Channel) {
        let now = NIODeadline.now()
        state.withLock { state in state.open[ObjectIdentifier(channel)]?.idleSince = now }
    }

    /// `channel` is closed: its place is free.
    func remove(_ channel: any Channel) {
        _ = state.withLock { state in state.open.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Connections holding a place now.
    var openCount: Int { state.withLock { $0.open.count } }
    /// Idle connections closed to make room, and new ones refused because every place had a request under way.
    var turnedAway: (evicted: Int, refused: Int) { state.withLock { ($0.evicted, $0.refused) } }

    /// At most one warning a minute: a flood must not flood the log too.
    private static func shouldWarn(_ state: inout State, now: NIODeadline) -> Bool {
        if let last = state.lastWarning, now - last < .seconds(60) { return false }
        state.lastWarning = now
        return true
    }
}
