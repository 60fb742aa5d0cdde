import Synchronization

/// Bounds how many event streams are open at once: each holds a subscription and a backlog of events, and a
/// client that opens streams without end would otherwise grow the gateway's memory.
final class EventStreamSlots: Sendable {
    let limit: Int
    private let open = Mutex(0)

    init(limit: Int) { self.limit = limit }

    /// A slot, freed when the last reference to it goes (the response's body, written or dropped); nil when all
    /// are taken.
    func take() -> Slot? {
        let limit = limit
        let taken = open.withLock { open -> Bool in
            guard open < limit else { return false }
            open += 1
            return true
        }
        return taken ? Slot(self) : nil
    }

    var inUse: Int { open.withLock { $0 } }

    fileprivate func free() { open.withLock { $0 -= 1 } }

    final class Slot: Sendable {
        private let slots: EventStreamSlots
        fileprivate init(_ slots: EventStreamSlots) { self.slots = slots }
        deinit { slots.free() }
    }
}
