#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Which file the ledger's path names: its device and inode, taken when the ledger is opened. An open SQLite
/// database keeps writing to the file it opened, so a state file deleted or replaced while syncgate runs would
/// take everything recorded since with it, silently; comparing identities before each write notices.
struct LedgerIdentity: Sendable, Hashable {
    var device: UInt64
    var inode: UInt64

    /// The identity of the file at `path` (not following a final link), or nil when there is none.
    static func of(_ path: String) -> LedgerIdentity? {
        var st = stat()
        guard lstat(path, &st) == 0 else { return nil }
        return LedgerIdentity(device: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }
}
