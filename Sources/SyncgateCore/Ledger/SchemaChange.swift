/// What opening a ledger did to its schema.
public enum SchemaChange: Sendable, Hashable, CustomStringConvertible {
    /// An empty database: the schema was created at this version.
    case created(Int)
    /// An older schema was upgraded in place.
    case upgraded(from: Int, to: Int)
    /// The schema was already at this version.
    case current(Int)

    /// What `syncgate migrate` says.
    public var description: String {
        switch self {
        case .created(let version): "created schema \(version)"
        case .upgraded(let from, let to): "upgraded schema \(from) to \(to)"
        case .current(let version): "already at schema \(version)"
        }
    }
}
