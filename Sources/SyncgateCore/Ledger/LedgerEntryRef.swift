/// A ledger row held by reference. A sync's plan keeps one per file of a destination; a reference (8 bytes)
/// instead of the row's few hundred inline bytes, copied into every plan, keeps that memory small.
public final class LedgerEntryRef: Sendable {
    public let value: LedgerEntry
    public init(_ value: LedgerEntry) { self.value = value }
}
