import Foundation

/// Hands planned waves from the planning thread (``PlanningPass``) to each destination's delivery task, through a
/// ``BoundedQueue`` per destination.
///
/// At most `capacity` waves wait per destination besides the one being delivered; the planning thread waits (it is
/// not one of the cooperative threads) until the destination takes one. The plans in memory are then a few waves,
/// however many files a first sync sends.
///
/// On a walk split between a fleet's instances, `share` is looked at again when a destination takes a wave: the plans
/// of files that the fleet's current view gives another instance are dropped there, before they are recorded and
/// claimed (an instance that started a moment before the others planned its first waves with a view of itself
/// alone). Those files are the others' to plan, as if this walk had reached them after the view changed.
final class WaveFeed: Sendable {
    private let queues: [BoundedQueue<DestinationPlanner.Outcome>]
    private let share: FleetShare?
    private let splitSources: Set<String>

    init(destinations: Int, capacity: Int = 1, share: FleetShare? = nil, splitSources: Set<String> = []) {
        queues = (0..<destinations).map { _ in BoundedQueue(capacity: capacity) }
        self.share = share
        self.splitSources = splitSources
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
        guard var wave = await queues[index].next() else { return nil }
        // Files are looked at only once the view moved off the walk's start: until then every plan was made with
        // the view of the moment, and no file's share is hashed a second time.
        if let share, !splitSources.isEmpty, share.view != share.start {
            let planned = wave.plans.count
            wave.plans.removeAll { splitSources.contains($0.file.key.source) && !share.owns(source: $0.file.key.source, path: $0.file.key.path) }
            if wave.plans.count < planned { share.noteDropped() }
        }
        return wave
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
