import GRDB

/// One row a ledger query returned, read by column index (a lookup by name costs more than the read). An SQLite
/// row is read in place (valid until its cursor moves on); a PostgreSQL row arrives decoded.
struct LedgerRow {
    enum Storage {
        case sqlite(Row)
        case values([LedgerValue])
    }
    let storage: Storage

    init(_ row: Row) { storage = .sqlite(row) }
    init(values: [LedgerValue]) { storage = .values(values) }

    /// A copy that stays valid after its cursor moves on.
    func copy() -> LedgerRow {
        if case .sqlite(let row) = storage { return LedgerRow(row.copy()) }
        return self
    }

    func string(_ index: Int) -> String? {
        switch storage {
        case .sqlite(let row): return row[index]
        case .values(let values):
            switch values[index] {
            case .text(let text): return text
            case .integer(let n): return String(n)
            case .real(let x): return String(x)
            case .boolean(let b): return b ? "1" : "0"
            case .null: return nil
            }
        }
    }

    func int64(_ index: Int) -> Int64? {
        switch storage {
        case .sqlite(let row): return row[index]
        case .values(let values):
            switch values[index] {
            case .integer(let n): return n
            case .real(let x): return Int64(x)
            case .text(let text): return Int64(text)
            case .boolean(let b): return b ? 1 : 0
            case .null: return nil
            }
        }
    }

    func double(_ index: Int) -> Double? {
        switch storage {
        case .sqlite(let row): return row[index]
        case .values(let values):
            switch values[index] {
            case .real(let x): return x
            case .integer(let n): return Double(n)
            case .text(let text): return Double(text)
            case .boolean(let b): return b ? 1 : 0
            case .null: return nil
            }
        }
    }

    func int(_ index: Int) -> Int? { int64(index).map { Int($0) } }
}
