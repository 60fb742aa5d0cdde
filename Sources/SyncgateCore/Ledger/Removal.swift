/// Why a ledger row's file is no longer in its source (the `removed` column; nil while it is there).
public enum Removal: String, Sendable, Hashable {
    /// Deleted from the source by someone else: the destination's copy stays, or is deleted where the destination
    /// says `delete_remote: true`.
    case source
    /// Deleted by syncgate after every destination it is routed to held it (`after_sync: delete`): the copies stay.
    case moved
    /// Deleted from the source, and then by syncgate at the destination (`delete_remote`).
    case remoteDeleted = "remote-deleted"
    /// Deleted from the source; `delete_remote` left the copy because another file now has its name there.
    case remoteKept = "remote-kept"

    /// How `status` words it.
    public var label: String {
        switch self {
        case .source: "source removed"
        case .moved: "moved (source deleted after delivery)"
        case .remoteDeleted: "source removed, copy deleted"
        case .remoteKept: "source removed, copy kept (its name is in use)"
        }
    }
}
