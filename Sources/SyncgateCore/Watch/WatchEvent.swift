/// What a ``SourceWatcher`` tells the gateway.
public enum WatchEvent: Sendable, Hashable {
    /// Files written (or moved, linked, created) in a source and then left alone for the settle time: ready to plan.
    /// Everything that fell due since the consumer last asked comes in one event, without duplicates, in the byte
    /// order of ``FileKey`` (source, then path). A file may be reported again after it changes again; a file
    /// reported may be gone by the time it is planned (deleted or renamed meanwhile), which the planner treats as
    /// it would in a walk.
    case files([FileKey])
    /// Files deleted from a source or renamed away (at once, nothing to settle), in the order of ``files(_:)``: the
    /// planner marks their rows removed once it finds them gone (see ``RemovalDetector``).
    case removed([FileKey])
    /// The watches can no longer say exactly what changed (the kernel's event queue overflowed, a source folder
    /// was removed or replaced, a watch was lost, the watch limit was reached, or more files changed at once than
    /// the watcher keeps): walk every source (a full pass). Every change made before this event is found by a walk
    /// started after it; changes after it are reported as usual. Reasons of rescans asked for while the consumer
    /// was busy are joined with "; ", and files that fell due meanwhile are left to the walk.
    case rescan(reason: String)
}
