import Synchronization

/// The share of a split walk (``FleetView``) that this instance plans, kept up to date while the walk runs: an
/// instance that joins takes its part of the files not yet planned at once, rather than at the next walk. A walk
/// whose view changed on the way covers no single view, and is walked again (see ``SyncEngine``).
final class FleetShare: Sendable {
    /// The view at the walk's start.
    let start: FleetView
    private let current: Mutex<FleetView>
    private let dropped = Atomic<Bool>(false)

    init(_ view: FleetView) {
        start = view
        current = Mutex(view)
    }

    var view: FleetView { current.withLock { $0 } }

    func update(_ view: FleetView) { current.withLock { $0 = view } }

    /// Whether the fleet the walk is split by changed since its start, or plans of this walk were dropped for
    /// another instance's share (``WaveFeed``): either way the walk covers no single view, and is walked again.
    var changed: Bool { view != start || dropped.load(ordering: .relaxed) }

    /// Plans of this walk were dropped because the current view gives their files to another instance.
    func noteDropped() { dropped.store(true, ordering: .relaxed) }

    /// Asked once per file: the view is read in place, not copied out of the lock.
    func owns(source: String, path: String) -> Bool { current.withLock { $0.owns(source: source, path: path) } }
}
