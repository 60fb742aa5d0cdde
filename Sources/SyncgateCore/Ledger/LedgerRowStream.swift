import Foundation
import GRDB

/// Ledger rows, read one at a time in the byte order of (source, path, destination) (see
/// ``Ledger/withRows(destination:_:)``). Only valid inside that call. The current row's key, status, size and
/// time are decoded as the stream moves; the whole row (``entry()``) only when asked for.
public final class LedgerRowStream {
    private let rows: RowCursor
    private var row: Row?
    /// The current row's file (nil once the rows are used up).
    public private(set) var key: FileKey?
    /// The current row's destination.
    public var destination: String? { row?[2] }

    init(_ rows: RowCursor) {
        self.rows = rows
    }

    /// Moves to the next row.
    public func advance() throws {
        row = try rows.next()
        key = row.map { FileKey(source: $0[0], path: $0[1]) }
    }

    /// Moves past every row before `file`; returns whether the current row is then `file`'s.
    public func seek(_ file: FileKey) throws -> Bool {
        while let key, key < file { try advance() }
        return key == file
    }

    public var status: FileStatus { row.flatMap { FileStatus(rawValue: $0[3]) } ?? .pending }
    public var size: Int64 { row?[12] ?? -1 }
    public var modificationTime: Date { Date(timeIntervalSince1970: row?[13] ?? 0) }
    /// Whether the current row is marked gone from its source.
    public var removed: Removal? { (row?[20] as String?).flatMap(Removal.init(rawValue:)) }

    /// The current row, decoded whole (without its receipt).
    public func entry() -> LedgerEntry? { row.map(Ledger.entry) }
}
