import Foundation

/// Ledger rows, read one at a time in the byte order of (source, path, destination) (see
/// ``Ledger/withRows(destination:_:)``). Only valid inside that call. The current row's key, status, size and
/// time are decoded as the stream moves; the whole row (``entry()``) only when asked for.
public final class LedgerRowStream {
    private let rows: any LedgerCursor
    private var row: LedgerRow?
    /// The current row's file (nil once the rows are used up).
    public private(set) var key: FileKey?
    /// The current row's destination.
    public var destination: String? { row?.string(2) }

    init(_ rows: any LedgerCursor) {
        self.rows = rows
    }

    /// Moves to the next row.
    public func advance() throws {
        row = try rows.next()
        key = row.map { FileKey(source: $0.string(0) ?? "", path: $0.string(1) ?? "") }
    }

    /// Moves past every row before `file`; returns whether the current row is then `file`'s.
    public func seek(_ file: FileKey) throws -> Bool {
        while let key, key < file { try advance() }
        return key == file
    }

    public var status: FileStatus { row?.string(3).flatMap(FileStatus.init(rawValue:)) ?? .pending }
    public var size: Int64 { row?.int64(12) ?? -1 }
    public var modificationTime: Date { Date(timeIntervalSince1970: row?.double(13) ?? 0) }
    /// Whether the current row is marked gone from its source.
    public var removed: Removal? { row?.string(20).flatMap(Removal.init(rawValue:)) }

    /// The current row, decoded whole (the receipt only where the stream reads it).
    public func entry() -> LedgerEntry? { row.map(Ledger.entry) }
}
