import Crypto
import Foundation
import SyncgateCore
import SyncgateJSON

/// One row to append and the value that makes it unique.
struct SheetRow: Sendable, Hashable {
    var cells: [Cell]
    var key: String
}

/// Turns records (or a file's facts) into rows in the configured column order, with syncgate's row id as the
/// first cell when no `key` is configured.
struct RowBuilder: Sendable {
    let config: SheetsConfig

    /// The row id of a record: the file's remote name, the start of the record's own SHA-256 (``recordHash(_:)``)
    /// and which occurrence of that content in the file it is (`builds.csv@3f2a9c01b7de4a55#1`). It does not
    /// depend on the rest of the file, so a file that grew, or was edited in the middle, yields the same ids for
    /// the records it already had. `rows: file` (no record): the start of the file's SHA-256, without `#n`.
    static func rowID(remoteName: String, hash: String, occurrence: Int?) -> String {
        guard let occurrence else { return "\(remoteName)@\(hash.prefix(12))" }
        return "\(remoteName)@\(hash)#\(occurrence)"
    }

    /// Hex characters of a record's hash kept in its row id (64 bits: no two different records of one file meet).
    static let recordHashLength = 16

    /// The start of the SHA-256 of a record's members in file order (name and JSON value of each), so that the
    /// same record hashes the same whatever else the file holds.
    static func recordHash(_ record: Record) -> String {
        var hasher = SHA256()
        for field in record.fields {
            hasher.update(data: Array(field.name.utf8))
            hasher.update(data: [0x1F])
            hasher.update(data: Array(field.value.text.utf8))
            hasher.update(data: [0x1E])
        }
        return hasher.finalize().prefix(recordHashLength / 2).map { String(format: "%02x", $0) }.joined()
    }

    /// The row-id cell: guarded wherever Sheets parses text (an id starting with `=`, `+`, `-`, `@` or `'`, from a
    /// file named so, is sent with a leading apostrophe), so that it reads back as it was sent.
    func rowIDCell(_ id: String) -> Cell {
        config.ownCellGuard.cell(.string(id))
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

    /// Record `record` as a row in the order of `columns` (the row id first when syncgate adds it). `occurrences`
    /// counts the record hashes met so far in the file (for the row id's `#n`).
    func row(
        record: Record, columns: [String], strictColumns: Bool, item: UploadItem, occurrences: inout [String: Int]
    ) throws -> SheetRow {
        if strictColumns {
            // Columns taken from the first record: a later record with other members would lose data.
            if let extra = record.fields.first(where: { !columns.contains($0.name) }) {
                throw RecordError(
                    line: record.line,
                    message: "member '\(extra.name)' is not among the columns taken from the first record (\(columns.joined(separator: ", "))); list them with `columns` in the config")
            }
        }
        let values = columns.map { record[$0]?.cell ?? .string("") }
        let guarding = config.formulaGuard
        var cells = values.map(guarding.cell)
        let key: String
        if config.addsRowID {
            let hash = RowBuilder.recordHash(record)
            let occurrence = occurrences[hash, default: 0] + 1
            occurrences[hash] = occurrence
            key = RowBuilder.rowID(remoteName: item.remoteName, hash: hash, occurrence: occurrence)
            cells.insert(rowIDCell(key), at: 0)
        } else {
            key = values[config.keyColumnIndex].text
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
        let plain = config.effectiveFileColumns.map { values[$0] ?? .string("") }
        var cells = plain.map(config.formulaGuard.cell)
        let key: String
        if config.addsRowID {
            key = RowBuilder.rowID(remoteName: item.remoteName, hash: item.sha256, occurrence: nil)
            cells.insert(rowIDCell(key), at: 0)
        } else {
            key = plain[config.keyColumnIndex].text
        }
        return SheetRow(cells: cells, key: key)
    }
}
