import Foundation
import SyncgateCore

/// One row to append and the value that makes it unique.
struct SheetRow: Sendable, Hashable {
    var cells: [Cell]
    var key: String
}

/// Turns records (or a file's facts) into rows in the configured column order, with syncgate's row id as the
/// first cell when no `key` is configured.
struct RowBuilder: Sendable {
    let config: SheetsConfig

    /// The row id of record `index` (1-based) of a file: its remote name, the start of its SHA-256, the index.
    static func rowID(remoteName: String, sha256: String, index: Int?) -> String {
        let base = "\(remoteName)@\(sha256.prefix(12))"
        guard let index else { return base }
        return "\(base)#\(index)"
    }

    /// The row-id cell: with `USER_ENTERED`, an id starting with `=`, `+`, `-`, `@` or `'` (a file named so) is
    /// sent with a leading apostrophe, which makes Sheets store it as text (the apostrophe is not kept).
    func rowIDCell(_ id: String) -> Cell {
        guard config.valueInput == .userEntered, let first = id.first, "=+-@'".contains(first) else { return .string(id) }
        return .string("'" + id)
    }

    /// The column names of the rows sent, as a header (`syncgate_row_id` first when added).
    func header(recordColumns: [String]) -> [String] {
        config.addsRowID ? [SheetsConfig.rowIDColumn] + recordColumns : recordColumns
    }

    /// Which columns a file's records map to: the configured ones, else the CSV header, else the first
    /// record's member names.
    func columns(csvHeader: [String]?, firstRecord: Record) -> [String] {
        if let configured = config.columns { return configured }
        if let csvHeader { return csvHeader }
        return firstRecord.fields.map(\.name)
    }

    /// Checks that a CSV header holds every configured column.
    func checkHeader(_ header: [String]) throws {
        guard let configured = config.columns else { return }
        if let missing = configured.first(where: { !header.contains($0) }) {
            throw RecordError(line: 1, message: "column '\(missing)' is not in the CSV header (\(header.joined(separator: ", ")))")
        }
    }

    func row(record: Record, index: Int, columns: [String], strictColumns: Bool, item: UploadItem) throws -> SheetRow {
        if strictColumns {
            // Columns taken from the first record: a later record with other members would lose data.
            if let extra = record.fields.first(where: { !columns.contains($0.name) }) {
                throw RecordError(
                    line: record.line,
                    message: "member '\(extra.name)' is not among the columns taken from the first record (\(columns.joined(separator: ", "))); list them with `columns` in the config")
            }
        }
        var cells = columns.map { record[$0]?.cell ?? .string("") }
        let key: String
        if config.addsRowID {
            key = RowBuilder.rowID(remoteName: item.remoteName, sha256: item.sha256, index: index)
            cells.insert(rowIDCell(key), at: 0)
        } else {
            key = cells[config.keyColumnIndex].text
            if key.isEmpty {
                throw RecordError(line: record.line, message: "no value for the key column '\(config.key ?? "")'")
            }
        }
        return SheetRow(cells: cells, key: key)
    }

    /// The row of `rows: file`: name, size, sha256, modified, source, synced_at (or the configured subset).
    func fileRow(item: UploadItem, syncedAt: Date) -> SheetRow {
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime]
        let values: [String: Cell] = [
            "name": .string(item.remoteName),
            "size": .number(String(item.size)),
            "sha256": .string(item.sha256),
            "modified": .string(iso.string(from: item.modificationTime)),
            "source": .string(item.source),
            "synced_at": .string(iso.string(from: syncedAt)),
        ]
        var cells = config.effectiveFileColumns.map { values[$0] ?? .string("") }
        let key: String
        if config.addsRowID {
            key = RowBuilder.rowID(remoteName: item.remoteName, sha256: item.sha256, index: nil)
            cells.insert(rowIDCell(key), at: 0)
        } else {
            key = cells[config.keyColumnIndex].text
        }
        return SheetRow(cells: cells, key: key)
    }
}
