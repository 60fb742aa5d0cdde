import Foundation

/// Bounds how many event streams are open at once: each holds a subscription and a backlog of events, and a
/// client that opens streams without end would otherwise grow the gateway's memory.
final class EventStreamSlots: @unchecked Sendable {
    let limit: Int
    private let lock = NSLock()
    private var open = 0

    init(limit: Int) { self.limit = limit }

    /// A slot, freed when the last reference to it goes (the response's body, written or dropped); nil when all
    /// are taken.
    func take() -> Slot? {
        let taken = lock.withLock { () -> Bool in
            guard open < limit else { return false }
            open += 1
            return true
        }
        return taken ? Slot(self) : nil
    }

    var inUse: Int { lock.withLock { open } }

    fileprivate func free() { lock.withLock { open -= 1 } }

    final class Slot: Sendable {
        private let slots: EventStreamSlots
        fileprivate init(_ slots: EventStreamSlots) { self.slots = slots }
        deinit { slots.free() }
    }
}
