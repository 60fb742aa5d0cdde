import Foundation

/// Merges a listing that comes in the byte order of its names, a page at a time, with the destination's ledger rows
/// in the same order (``VerificationRowCursor``), the way a sorted merge join does: a row whose name comes before the
/// next listed name has no copy, a listed name that no row reaches is extra. Neither side is held whole: memory is
/// a listing page and a page of rows per source, whatever the destination holds.
struct ListingMerge {
    /// A listing page or a ledger row that broke the byte order the merge relies on: the check compares in memory
    /// instead (``ListingIndex``).
    struct OutOfOrder: Error, CustomStringConvertible {
        var side: String
        var description: String { "\(side) are not in the byte order of their names" }
    }

    private var rows: VerificationRowCursor
    private var lastListed: String?
    private(set) var comparison: ListingComparison

    init(rows: VerificationRowCursor, hashing: Bool) {
        self.rows = rows
        comparison = ListingComparison(hashing: hashing)
    }

    /// Compares the next page of the listing with the rows up to its last name.
    mutating func merge(_ page: [RemoteListing.Entry]) async throws {
        for entry in page {
            if let lastListed, ExactString.compare(lastListed, entry.name) >= 0 { throw OutOfOrder(side: "the listing's names") }
            lastListed = entry.name
            comparison.listed += 1
            while let row = rows.peek, ExactString.compare(row.name, entry.name) < 0 {
                comparison.compare(row.entry, remoteName: row.name, copy: nil, listingIsComplete: true)
                try await rows.advance()
            }
            var known = false
            while let row = rows.peek, ExactString.compare(row.name, entry.name) == 0 {
                known = true
                comparison.compare(row.entry, remoteName: row.name, copy: entry, listingIsComplete: true)
                try await rows.advance()
            }
            if !known { comparison.noteExtra(entry.name) }
        }
    }

    /// The comparison once the listing has ended: the rows after its last name have no copy (they are only
    /// unconfirmed, as are those reported missing, when the listing said it left names out).
    mutating func finish(listingIsComplete: Bool) async throws -> ListingComparison {
        while let row = rows.peek {
            comparison.compare(row.entry, remoteName: row.name, copy: nil, listingIsComplete: true)
            try await rows.advance()
        }
        if !listingIsComplete { comparison.listingWasIncomplete() }
        return comparison
    }
}
