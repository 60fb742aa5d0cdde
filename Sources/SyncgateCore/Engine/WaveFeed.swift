import Foundation

/// Hands planned waves from the planning thread (``PlanningPass``) to each destination's delivery task, through a
/// ``BoundedQueue`` per destination.
///
/// At most `capacity` waves wait per destination besides the one being delivered; the planning thread waits (it is
/// not one of the cooperative threads) until the destination takes one. The plans in memory are then a few waves,
/// however many files a first sync sends.
final class WaveFeed: Sendable {
    private let queues: [BoundedQueue<DestinationPlanner.Outcome>]

    init(destinations: Int, capacity: Int = 1) {
        queues = (0..<destinations).map { _ in BoundedQueue(capacity: capacity) }
    }

    /// Hands a wave to destination `index`, waiting while it has `capacity` waves not taken yet unless `wait` is
    /// false (a destination that left drops it). Returns false when the run is stopping (``stop()``): plan no
    /// further.
    func send(_ wave: DestinationPlanner.Outcome, to index: Int, wait: Bool = true) -> Bool {
        queues[index].put(wave, wait: wait)
    }

    /// Destination `index`'s next wave; nil once planning ended and its waves were taken, or when the calling task
    /// is cancelled.
    func nextWave(_ index: Int) async -> DestinationPlanner.Outcome? {
        await queues[index].next()
    }

    /// Destination `index` takes no more waves (it ended early: interrupted, or its ledger failed).
    func leave(_ index: Int) {
        queues[index].leave()
    }

    /// The run is stopping: the planning thread stops at its next check and no longer waits.
    func stop() {
        for queue in queues { queue.stop() }
    }

    var isStopped: Bool { queues.first?.isStopped ?? false }

    /// No more waves: every destination's waves end once those waiting are taken.
    func finish() {
        for queue in queues { queue.finish() }
    }
}
