/// Where the ledger is: an SQLite file (the default, `.syncgate/state.sqlite` beside the config) or a PostgreSQL
/// database (`state: postgres://user@host/db`, docs/state.md).
public enum StateLocation: Sendable, Hashable {
    case sqlite(path: String)
    case postgres(PostgresStateLocation)

    /// How messages name it: the file's path, or the URL without its password.
    public var displayName: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let location): location.displayName
        }
    }
}
