/// The parts of an A1-notation range that syncgate needs: the sheet (as written, quotes kept) and the first
/// column, so that it can address the key column (`Builds!A:H` with the key in the third column -> `Builds!C:C`).
public struct A1Range: Sendable, Hashable, CustomStringConvertible {
    public struct ParseError: Error, Sendable {}

    /// The sheet part as written (`Builds`, `'My sheet'`), or nil when the range names no sheet.
    public var sheet: String?
    /// Zero-based index of the first column of the range (A = 0).
    public var firstColumn: Int
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
        if cellPart.isEmpty {
            firstColumn = 0
        } else {
            guard A1Range.isCellRange(cellPart) else { throw ParseError() }
            let start = cellPart.split(separator: ":", omittingEmptySubsequences: false)[0]
            let letters = start.prefix { $0.isLetter }
            firstColumn = letters.isEmpty ? 0 : A1Range.columnIndex(String(letters))!
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

    public var description: String { text }
}
