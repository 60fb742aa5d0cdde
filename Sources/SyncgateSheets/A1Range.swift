/// The parts of an A1-notation range that syncgate needs: the sheet (as written, quotes kept) and the first
/// column, so that it can address the key column (`Builds!A:H` with the key in the third column -> `Builds!C:C`).
public struct A1Range: Sendable, Hashable, CustomStringConvertible {
    public struct ParseError: Error, Sendable {}

    /// The sheet part as written (`Builds`, `'My sheet'`), or nil when the range names no sheet.
    public var sheet: String?
    /// Zero-based index of the first column of the range (A = 0).
    public var firstColumn: Int
    /// Zero-based index of the first row of the range (row 1 = 0): the header row.
    public var firstRow: Int
    /// Zero-based index of the last column of the range, or nil when it is unbounded (`Sheet1`, `A1`).
    public var lastColumn: Int?
    public var text: String

    public init(parsing text: String) throws {
        self.text = text
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw ParseError() }
        var sheetPart: String?
        var cellPart: Substring
        if trimmed.hasPrefix("'") {
            // Quoted sheet name: '' is an escaped quote.
            var index = trimmed.index(after: trimmed.startIndex)
            var closed: String.Index?
            while index < trimmed.endIndex {
                if trimmed[index] == "'" {
                    let next = trimmed.index(after: index)
                    if next < trimmed.endIndex, trimmed[next] == "'" {
                        index = trimmed.index(after: next)
                        continue
                    }
                    closed = index
                    break
                }
                index = trimmed.index(after: index)
            }
            guard let closed else { throw ParseError() }
            let after = trimmed.index(after: closed)
            sheetPart = String(trimmed[..<after])
            if after == trimmed.endIndex {
                cellPart = ""
            } else {
                guard trimmed[after] == "!" else { throw ParseError() }
                cellPart = trimmed[trimmed.index(after: after)...]
            }
        } else if let bang = trimmed.firstIndex(of: "!") {
            sheetPart = String(trimmed[..<bang])
            cellPart = trimmed[trimmed.index(after: bang)...]
            guard !sheetPart!.isEmpty else { throw ParseError() }
        } else if trimmed.contains(":"), A1Range.isCellRange(Substring(trimmed)) {
            // `A:H`, `A2:H`: a range of the first sheet. (Without ':' a bare word is read as a sheet name,
            // as `Tab1` could be either; write `Sheet!A1` to be explicit.)
            cellPart = Substring(trimmed)
        } else {
            // A bare sheet name.
            sheetPart = trimmed
            cellPart = ""
        }
        sheet = sheetPart
        firstColumn = 0
        firstRow = 0
        lastColumn = nil
        if !cellPart.isEmpty {
            guard A1Range.isCellRange(cellPart) else { throw ParseError() }
            let parts = cellPart.split(separator: ":", omittingEmptySubsequences: false)
            let letters = parts[0].prefix { $0.isLetter }
            firstColumn = letters.isEmpty ? 0 : A1Range.columnIndex(String(letters))!
            let digits = parts[0].dropFirst(letters.count)
            if let row = Int(digits), row > 0 { firstRow = row - 1 }
            if parts.count == 2 {
                let end = parts[1].prefix { $0.isLetter }
                lastColumn = end.isEmpty ? nil : A1Range.columnIndex(String(end))
            }
        }
    }

    /// `A`, `A1`, `A:H`, `A1:H10`, `A2:H`, `1:5` style cell parts.
    static func isCellRange(_ text: Substring) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count) else { return false }
        for part in parts {
            guard !part.isEmpty else { return false }
            let letters = part.prefix { $0.isASCII && $0.isLetter }
            let digits = part.dropFirst(letters.count)
            guard digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return false }
            guard letters.count <= 3, !(letters.isEmpty && digits.isEmpty) else { return false }
        }
        return true
    }

    /// `A` -> 0, `Z` -> 25, `AA` -> 26.
    public static func columnIndex(_ letters: String) -> Int? {
        var value = 0
        for scalar in letters.uppercased().unicodeScalars {
            guard scalar.value >= 65, scalar.value <= 90 else { return nil }
            value = value * 26 + Int(scalar.value - 64)
        }
        return value == 0 ? nil : value - 1
    }

    /// 0 -> `A`, 26 -> `AA`.
    public static func columnLetters(_ index: Int) -> String {
        var n = index + 1
        var letters: [Character] = []
        while n > 0 {
            let rem = (n - 1) % 26
            letters.append(Character(UnicodeScalar(UInt8(65 + rem))))
            n = (n - 1) / 26
        }
        return String(letters.reversed())
    }

    /// The whole column at `offset` from the range's first column, on the same sheet (`Builds!C:C`).
    public func column(at offset: Int) -> String {
        let letters = A1Range.columnLetters(firstColumn + offset)
        if let sheet { return "\(sheet)!\(letters):\(letters)" }
        return "\(letters):\(letters)"
    }

    /// The column at `offset` from the range's first column, below the header row (`Builds!C2:C`): the values
    /// of the key column, without its header.
    public func columnBelowHeader(at offset: Int) -> String {
        let letters = A1Range.columnLetters(firstColumn + offset)
        let cells = "\(letters)\(firstRow + 2):\(letters)"
        if let sheet { return "\(sheet)!\(cells)" }
        return cells
    }

    /// The header row: the range's first row, from its first column to its last (`Builds!A1:H1`), or the whole
    /// row when the range has no last column (`Sheet1!1:1`; the cells left of the first column are dropped by
    /// the reader).
    public var headerRow: String {
        let row = firstRow + 1
        let cells: String
        if let lastColumn, lastColumn >= firstColumn {
            cells = "\(A1Range.columnLetters(firstColumn))\(row):\(A1Range.columnLetters(lastColumn))\(row)"
        } else {
            cells = "\(row):\(row)"
        }
        if let sheet { return "\(sheet)!\(cells)" }
        return cells
    }

    /// Whether ``headerRow`` starts at the sheet's column A (a whole row), so that the reader must drop the cells
    /// left of ``firstColumn``.
    public var headerRowIsWholeRow: Bool { lastColumn == nil || lastColumn! < firstColumn }

    /// How many columns the range allows (nil: unbounded).
    public var width: Int? { lastColumn.map { $0 - firstColumn + 1 } }

    public var description: String { text }
}
