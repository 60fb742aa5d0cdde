import Foundation
import SyncgateCore

/// Where each column syncgate sends lands in the sheet: the position of its name in the sheet's header row.
///
/// Rows are built in the order of the columns sent (`syncgate_row_id` first when syncgate adds it, then the
/// configured or file's columns); ``place(_:)`` puts each cell under its header, leaving the header's other columns
/// empty. A header in another order is followed; a column the header lacks is an error, never a shifted row.
struct ColumnLayout: Sendable, Hashable {
    /// The names of the columns sent, in the order rows are built.
    var columns: [String]
    /// For each column sent, its offset in the header (from the range's first column).
    var positions: [Int]

    /// The width of a placed row: up to the last column written.
    var width: Int { (positions.max() ?? -1) + 1 }

    /// The layout of a header syncgate writes itself: the columns in the order sent.
    static func identity(_ columns: [String]) -> ColumnLayout {
        ColumnLayout(columns: columns, positions: Array(columns.indices))
    }

    /// The columns sent mapped by name onto `header` (the range's first row, from its first column). Names are
    /// compared with surrounding spaces trimmed. Returns the name of the first column the header lacks instead,
    /// when one does.
    static func mapping(header: [String], columns: [String]) -> Result<ColumnLayout, MissingColumn> {
        var index: [String: Int] = [:]
        for (offset, name) in header.enumerated() {
            let trimmed = name.trimmingCharacters(in: .whitespaces)
            if !trimmed.isEmpty && index[trimmed] == nil { index[trimmed] = offset }
        }
        var positions: [Int] = []
        for name in columns {
            guard let at = index[name.trimmingCharacters(in: .whitespaces)] else {
                return .failure(MissingColumn(name: name))
            }
            positions.append(at)
        }
        return .success(ColumnLayout(columns: columns, positions: positions))
    }

    /// A column of the rows that the sheet's header does not have.
    struct MissingColumn: Error, Hashable {
        var name: String
    }

    /// The offset of column `name` in the header, if it is sent.
    func position(of name: String) -> Int? {
        columns.firstIndex(of: name).map { positions[$0] }
    }

    /// `cells` (in the order of ``columns``) placed under their headers.
    func place(_ cells: [Cell]) -> [Cell] {
        if positions == Array(positions.indices) { return cells }
        var placed = [Cell](repeating: .string(""), count: width)
        for (cell, at) in zip(cells, positions) { placed[at] = cell }
        return placed
    }
}
