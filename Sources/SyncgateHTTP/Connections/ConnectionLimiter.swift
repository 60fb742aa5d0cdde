import Logging
import NIOCore
import Synchronization

/// Bounds the connections open at once to `limit`, well below the process's descriptors, so that idle or slow
/// clients can neither take every descriptor nor keep out the next client. When a connection comes and all places
/// are taken, the connection idle longest (no request under way: none sent yet, or waiting for the next one) is
/// closed to make room; when every connection has a request under way, the new one is closed at once. A flood of
/// idle connections thus churns through the places while a real request always gets in. Every operation takes
/// constant time (the idle connections are kept in a list in the order they became idle): a flood makes the gateway
/// admit thousands of connections a second.
final class ConnectionLimiter: Sendable {
    private struct Entry {
        let channel: any Channel
        /// Whether it has no request under way (it is then in the idle list, between `older` and `newer`).
        var idle = true
        var older: ObjectIdentifier?
        var newer: ObjectIdentifier?
    }

    private struct State: ~Copyable {
        var open: [ObjectIdentifier: Entry] = [:]
        /// The idle list's ends: the connection idle longest, and the one idle since last.
        var oldestIdle: ObjectIdentifier?
        var newestIdle: ObjectIdentifier?
        var evicted = 0
        var refused = 0
        var lastWarning: NIODeadline?

        /// Puts an entry (already in `open`) at the newest end of the idle list.
        mutating func appendIdle(_ id: ObjectIdentifier) {
            open[id]?.idle = true
            open[id]?.older = newestIdle
            open[id]?.newer = nil
            if let newestIdle { open[newestIdle]?.newer = id } else { oldestIdle = id }
            newestIdle = id
        }

        /// Takes an entry out of the idle list (nothing when it is not in it).
        mutating func unlinkIdle(_ id: ObjectIdentifier) {
            guard let entry = open[id], entry.idle else { return }
            if let older = entry.older { open[older]?.newer = entry.newer } else { oldestIdle = entry.newer }
            if let newer = entry.newer { open[newer]?.older = entry.older } else { newestIdle = entry.older }
            open[id]?.idle = false
            open[id]?.older = nil
            open[id]?.newer = nil
        }
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
        let (admitted, victim, warn): (Bool, (any Channel)?, Bool) = state.withLock { state in
            let id = ObjectIdentifier(channel)
            if state.open[id] != nil { return (true, nil, false) }
            var victim: (any Channel)?
            if state.open.count >= limit {
                guard let oldest = state.oldestIdle else {
                    state.refused += 1
                    return (false, nil, ConnectionLimiter.shouldWarn(&state))
                }
                state.unlinkIdle(oldest)
                victim = state.open.removeValue(forKey: oldest)?.channel
                state.evicted += 1
            }
            state.open[id] = Entry(channel: channel)
            state.appendIdle(id)
            return (true, victim, victim != nil && ConnectionLimiter.shouldWarn(&state))
        }
        victim?.close(promise: nil)
        if warn { warnAtLimit() }
        return admitted
    }

    /// Whether every place is taken: a new connection gets one only by closing an idle one.
    var isFull: Bool { state.withLock { $0.open.count >= limit } }

    /// A new connection was closed before it took a place (``ConnectionDoor``: full, and nothing that could be
    /// a request arrived with it).
    func turnedAwayAtTheDoor() {
        let warn = state.withLock { state in
            state.refused += 1
            return ConnectionLimiter.shouldWarn(&state)
        }
        if warn { warnAtLimit() }
    }

    /// A request is under way on `channel`: it is not closed to make room.
    func busy(_ channel: any Channel) {
        state.withLock { state in state.unlinkIdle(ObjectIdentifier(channel)) }
    }

    /// `channel` has answered everything it was asked and waits for the next request.
    func idle(_ channel: any Channel) {
        state.withLock { state in
            let id = ObjectIdentifier(channel)
            guard state.open[id] != nil else { return }
            state.unlinkIdle(id)
            state.appendIdle(id)
        }
    }

    /// `channel` is closed: its place is free.
    func remove(_ channel: any Channel) {
        state.withLock { state in
            let id = ObjectIdentifier(channel)
            state.unlinkIdle(id)
            state.open[id] = nil
        }
    }

    /// Connections holding a place now.
    var openCount: Int { state.withLock { $0.open.count } }
    /// Idle connections closed to make room, and new ones refused (every place had a request under way, or nothing
    /// that could be a request came with them).
    var turnedAway: (evicted: Int, refused: Int) { state.withLock { ($0.evicted, $0.refused) } }

    private func warnAtLimit() {
        let (evicted, refused) = turnedAway
        logger.warning("HTTP connections at their limit (\(limit), http.max_connections): idle ones are closed to make room",
                       metadata: ["idle_closed": .stringConvertible(evicted), "refused": .stringConvertible(refused)])
    }

    /// At most one warning a minute: a flood must not flood the log too.
    private static func shouldWarn(_ state: inout State) -> Bool {
        let now = NIODeadline.now()
        if let last = state.lastWarning, now - last < .seconds(60) { return false }
        state.lastWarning = now
        return true
    }
}
