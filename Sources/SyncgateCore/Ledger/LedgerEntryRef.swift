/// A ledger row held by reference. A sync's plan keeps one per file it will send or fail; a reference (8 bytes)
/// instead of the row's few hundred inline bytes, copied with every plan, keeps that memory small.
public final class LedgerEntryRef: Sendable {
    public let value: LedgerEntry
    public init(_ value: LedgerEntry) { self.value = value }
}
