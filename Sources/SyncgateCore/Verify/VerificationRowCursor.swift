import Foundation

/// A destination's ledger rows in the byte order of their copies' names, a page at a time: each source's rows are
/// read in path order along the primary key (``Ledger/rows(of:source:after:limit:)``) and the sources merged, so
/// that what is held is a page per source. Names follow paths' order where the destination keeps the path behind a
/// fixed prefix (``Destination/remoteNamesAreDistinct``); a row that breaks the order (a receipt naming the copy
/// otherwise, say after the prefix was changed) throws ``ListingMerge/OutOfOrder``.
struct VerificationRowCursor {
    /// A row with the name its copy is stored under.
    struct Row {
        var entry: LedgerEntry
        var name: String
    }

    /// One source's rows: the page read, where in it the cursor is, and where the next page starts.
    private struct SourceRows {
        var source: String
        var page: [Row] = []
        var index = 0
        var lastPath: String?
        var exhausted = false
        var head: Row? { index < page.count ? page[index] : nil }
    }

    static let pageSize = 1_000

    private let ledger: Ledger
    private let destination: String
    private let remoteName: @Sendable (LedgerEntry) -> String
    private let pageSize: Int
    private var sources: [SourceRows]

    init(ledger: Ledger, destination: String, pageSize: Int = VerificationRowCursor.pageSize,
         remoteName: @escaping @Sendable (LedgerEntry) -> String) async throws {
        self.ledger = ledger
        self.pageSize = pageSize
        self.destination = destination
        self.remoteName = remoteName
        sources = try await ledger.sources(withRowsFor: destination).map { SourceRows(source: $0) }
        for index in sources.indices { try await fill(index) }
    }

    /// The next row in name order, without taking it (nil at the end).
    var peek: Row? {
        var best: Row?
        for rows in sources {
            guard let head = rows.head else { continue }
            if let current = best, ExactString.compare(head.name, current.name) >= 0 { continue }
            best = head
        }
        return best
    }

    /// Takes the row ``peek`` gives.
    mutating func advance() async throws {
        var chosen: Int?
        for index in sources.indices {
            guard let head = sources[index].head else { continue }
            if let current = chosen, let best = sources[current].head, ExactString.compare(head.name, best.name) >= 0 { continue }
            chosen = index
        }
        guard let chosen else { return }
        sources[chosen].index += 1
        if sources[chosen].head == nil { try await fill(chosen) }
    }

    /// Reads the next page of a source's rows, once its page is used up.
    private mutating func fill(_ index: Int) async throws {
        guard !sources[index].exhausted else { return }
        let entries = try await ledger.rows(of: destination, source: sources[index].source, after: sources[index].lastPath,
                                            limit: pageSize)
        var page: [Row] = []
        page.reserveCapacity(entries.count)
        var previous = sources[index].page.last?.name
        for entry in entries {
            let name = remoteName(entry)
            if let previous, ExactString.compare(previous, name) > 0 { throw ListingMerge.OutOfOrder(side: "the ledger's rows") }
            previous = name
            page.append(Row(entry: entry, name: name))
        }
        sources[index].page = page
        sources[index].index = 0
        sources[index].lastPath = entries.last?.file.path ?? sources[index].lastPath
        sources[index].exhausted = entries.count < pageSize
    }
}
