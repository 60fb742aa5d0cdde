import Foundation

/// Hands planned waves from the planning thread (``PlanningPass``) to each destination's delivery task.
///
/// At most `capacity` waves wait per destination besides the one being delivered; the planning thread waits (it is
/// not one of the cooperative threads) until the destination takes one. The plans in memory are then a few waves,
/// however many files a first sync sends.
final class WaveFeed: @unchecked Sendable {
    private let condition = NSCondition()
    private var waiting: [Int]
    private var left: [Bool]
    private var stopped = false
    private let capacity: Int
    private let continuations: [AsyncStream<DestinationPlanner.Outcome>.Continuation]
    /// Each destination's waves, in the order of the planners.
    let waves: [AsyncStream<DestinationPlanner.Outcome>]

    init(destinations: Int, capacity: Int = 1) {
        self.capacity = capacity
        waiting = Array(repeating: 0, count: destinations)
        left = Array(repeating: false, count: destinations)
        var streams: [AsyncStream<DestinationPlanner.Outcome>] = []
        var continuations: [AsyncStream<DestinationPlanner.Outcome>.Continuation] = []
        for _ in 0..<destinations {
            let (stream, continuation) = AsyncStream<DestinationPlanner.Outcome>.makeStream()
            streams.append(stream)
            continuations.append(continuation)
        }
        self.waves = streams
        self.continuations = continuations
    }

    /// Hands a wave to destination `index`, waiting while it has `capacity` waves not taken yet unless `wait` is
    /// false (a destination that left drops it). Returns false when the run is stopping (``stop()``): plan no
    /// further.
    func send(_ wave: DestinationPlanner.Outcome, to index: Int, wait: Bool = true) -> Bool {
        let (deliver, go): (Bool, Bool) = condition.withLock {
            while wait && waiting[index] >= capacity && !stopped && !left[index] { condition.wait() }
            guard !stopped else { return (false, false) }
            guard !left[index] else { return (false, true) }
            waiting[index] += 1
            return (true, true)
        }
        if deliver { continuations[index].yield(wave) }
        return go
    }

    /// Destination `index` took a wave to deliver it.
    func took(_ index: Int) {
        condition.withLock {
            waiting[index] -= 1
            condition.broadcast()
        }
    }

    /// Destination `index` takes no more waves (it ended early: interrupted, or its ledger failed).
    func leave(_ index: Int) {
        condition.withLock {
            left[index] = true
            condition.broadcast()
        }
    }

    /// The run is stopping: the planning thread stops at its next check and no longer waits.
    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    var isStopped: Bool { condition.withLock { stopped } }

    /// No more waves: every destination's stream ends once its waiting waves are taken.
    func finish() {
        for continuation in continuations { continuation.finish() }
    }
}
