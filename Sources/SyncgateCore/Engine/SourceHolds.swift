import Foundation
import Synchronization

/// The sources a mirror holds back (``SyncSummary/SourceHold``), as the last passes judged them: kept by a
/// ``SyncEngine`` across the passes of a gateway, so that the passes over a few files its watches report delete
/// nothing of a source that its last full walk held back, and so that a refusal is logged once, not every pass.
public final class SourceHolds: Sendable {
    private let held = Mutex<[String: SyncSummary.SourceHold]>([:])

    public init() {}

    /// The holds now, in the order of the source names.
    public var current: [SyncSummary.SourceHold] {
        held.withLock { $0.values.sorted { $0.source < $1.source } }
    }

    /// The names of the sources held back now.
    public var sources: Set<String> {
        held.withLock { Set($0.keys) }
    }

    /// A full walk judged `judged` (the sources it walked to their end): those in `holds` are held back, the others
    /// no longer. Returns what changed: holds that are new, holds that stand for another reason now (a source
    /// found empty while its link was being switched, then found to be another folder), and sources released.
    func update(judged: Set<String>, holds: [SyncSummary.SourceHold]) -> HoldChanges {
        held.withLock { table in
            var newHolds: [SyncSummary.SourceHold] = []
            var reasonChanged: [SyncSummary.SourceHold] = []
            var released: [String] = []
            let bySource = Dictionary(holds.map { ($0.source, $0) }) { a, _ in a }
            for source in judged.union(bySource.keys).sorted() {
                if let hold = bySource[source] {
                    if let before = table[source] {
                        if before.reason != hold.reason { reasonChanged.append(hold) }
                    } else {
                        newHolds.append(hold)
                    }
                    table[source] = hold
                } else if table.removeValue(forKey: source) != nil {
                    released.append(source)
                }
            }
            return HoldChanges(held: newHolds, reasonChanged: reasonChanged, released: released)
        }
    }

    /// What a pass changed in the holds (``update(judged:holds:)``).
    struct HoldChanges {
        var held: [SyncSummary.SourceHold] = []
        var reasonChanged: [SyncSummary.SourceHold] = []
        var released: [String] = []
    }
}
