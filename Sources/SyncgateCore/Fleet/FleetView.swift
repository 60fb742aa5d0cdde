import Foundation

/// The instances working on a shared ledger (PostgreSQL) as one of them sees them at the start of a walk: the full
/// walk of a source is split between them by a hash of each file's source and path (``owns(_:)``), so that each
/// instance stats only its share of the files (its listings still read every folder).
public struct FleetView: Sendable, Equatable, CustomStringConvertible {
    /// The live instances (``Ledger/instanceID``), in byte order; this one among them.
    public let members: [String]
    /// This instance.
    public let me: String
    private let index: Int

    public init(members: [String], me: String) {
        var sorted = Array(Set(members + [me]))
        sorted.sort { ExactString.compare($0, $1) < 0 }
        self.members = sorted
        self.me = me
        self.index = sorted.firstIndex(of: me) ?? 0
    }

    /// One text for the whole view, stored by an instance that walked its share of it (``Ledger/noteWalked(_:)``).
    public var signature: String { members.joined(separator: "\n") }

    public var isAlone: Bool { members.count <= 1 }

    /// Whether the file at `path` of `source` is this instance's to stat and plan: FNV-1a (64 bits) over the source's
    /// name, a zero byte and the path, mixed by MurmurHash3's 64-bit finalizer (FNV-1a's low bits alone follow the
    /// parity of the bytes, and would split two instances' work unevenly), modulo the number of instances. The same
    /// on every instance, whatever its platform.
    public func owns(source: String, path: String) -> Bool {
        guard members.count > 1 else { return true }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        func mix(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        for byte in source.utf8 { mix(byte) }
        mix(0)
        for byte in path.utf8 { mix(byte) }
        hash ^= hash >> 33
        hash = hash &* 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        hash = hash &* 0xc4ce_b9fe_1a85_ec53
        hash ^= hash >> 33
        return Int(hash % UInt64(members.count)) == index
    }

    public var description: String { "instance \(index + 1) of \(members.count)" }
}
