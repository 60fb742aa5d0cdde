import Crypto
import Foundation

/// Where a destination's copies go, as its plugin tells the core at config time (``DestinationSetup/deliversTo(_:identity:)``):
/// a folder, a bucket and prefix at an endpoint, a spreadsheet and sheet. The ledger keeps it per destination; when
/// a run finds it changed, the destination now points somewhere that holds none of what the ledger says it holds,
/// and the files recorded synced there are made pending again (``Ledger/noteTarget(_:_:at:)``).
public struct DestinationTarget: Sendable, Hashable {
    /// What people are told (the run's warning when it changed): never a secret.
    public var description: String
    /// What is compared, kept only as a digest (it may be a capability URL).
    public var identity: String

    public init(description: String, identity: String? = nil) {
        self.description = description
        self.identity = identity ?? description
    }

    /// The SHA-256 of ``identity``, in hex: what the ledger stores and compares.
    public var digest: String {
        FileHasher.hex(SHA256.hash(data: Data(identity.utf8)))
    }
}
