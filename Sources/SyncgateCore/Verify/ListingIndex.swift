import Foundation

/// A destination's whole listing, held by name, compared with the destination's rows in the ledger's key order: for
/// listings that do not come in byte order (a head unit's ListFiles, a plugin's `list`, a Sheets key column) or that
/// broke it (``ListingMerge/OutOfOrder``). Holds every listed name; ``ListingMerge`` holds a page.
struct ListingIndex: Sendable {
    /// A listed copy, and whether a ledger row names it.
    private struct Listed {
        var entry: RemoteListing.Entry
        var known = false
    }

    private var listed: [ExactString: Listed]
    private let listingIsComplete: Bool
    private let remoteName: @Sendable (LedgerEntry) -> String
    private(set) var comparison: ListingComparison

    /// `remoteName` gives the name a row's copy is stored under.
    init(listing: RemoteListing, hashing: Bool, remoteName: @escaping @Sendable (LedgerEntry) -> String) {
        var listed: [ExactString: Listed] = [:]
        listed.reserveCapacity(listing.entries.count)
        for entry in listing.entries { listed[ExactString(entry.name)] = Listed(entry: entry) }
        self.listed = listed
        listingIsComplete = listing.isComplete
        self.remoteName = remoteName
        comparison = ListingComparison(hashing: hashing)
        comparison.listed = listing.entries.count
    }

    /// Compares one ledger row of the destination.
    mutating func compare(_ row: LedgerEntry) {
        let name = remoteName(row)
        let key = ExactString(name)
        let copy = listed[key]?.entry
        if copy != nil { listed[key]?.known = true }
        comparison.compare(row, remoteName: name, copy: copy, listingIsComplete: listingIsComplete)
    }

    /// The comparison, with the names no row knew noted as extras.
    func finished() -> ListingComparison {
        var comparison = comparison
        for (name, copy) in listed where !copy.known { comparison.noteExtra(name.value) }
        return comparison
    }
}
