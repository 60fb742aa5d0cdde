import Foundation

extension Ledger {
    /// What ``importRows(from:)`` copied, table by table.
    public struct ImportCounts: Sendable, Equatable, CustomStringConvertible {
        public var files = 0
        public var destinations = 0
        public var resumableUploads = 0
        public var sourceRoots = 0
        public var deletionRecords = 0
        public var verifications = 0

        public var description: String {
            "\(files) file rows, \(destinations) destination states, \(resumableUploads) resumable uploads, "
                + "\(sourceRoots) source roots, \(deletionRecords) deletion records, \(verifications) verifications"
        }
    }

    /// A table ``importRows(from:)`` copies: its columns, each with the kind the schema gives it, so that a value is
    /// bound as the column holds it whichever engine it comes from.
    private struct ImportedTable: Sendable {
        enum Kind { case text, integer, real }
        let name: String
        let columns: [(String, Kind)]
    }

    /// Every table that says something of files and destinations. Not copied: the fleet's instances, walks and
    /// leaders (nothing runs on the new ledger yet), claims (`claimed_by`, `lease_until`: the imported rows are
    /// free), and where the destinations' copies go (`destination_targets`: the first run on the new ledger records
    /// them from its config, without judging).
    private static let importedTables: [ImportedTable] = [
        ImportedTable(name: "files", columns: [
            ("source", .text), ("path", .text), ("destination", .text), ("status", .text), ("attempts", .integer),
            ("last_attempt_at", .real), ("last_error", .text), ("error_class", .text), ("error_code", .text),
            ("next_retry_at", .real), ("failed_runs", .integer), ("first_failed_at", .real), ("size", .integer),
            ("mtime", .real), ("sha256", .text), ("receipt", .text), ("bytes_done", .integer), ("queued_at", .real),
            ("synced_at", .real), ("updated_at", .real), ("removed", .text), ("removed_at", .real),
        ]),
        ImportedTable(name: "destinations", columns: [
            ("name", .text), ("state", .text), ("since", .real), ("last_error", .text), ("error_code", .text),
            ("failed_probes", .integer), ("next_probe_at", .real), ("fingerprint", .text), ("last_seen_at", .real),
            ("updated_at", .real), ("retry_after_until", .real),
        ]),
        ImportedTable(name: "resume_state", columns: [
            ("destination", .text), ("name", .text), ("value", .text), ("updated_at", .real),
        ]),
        ImportedTable(name: "source_roots", columns: [
            ("source", .text), ("device", .text), ("inode", .text), ("files", .integer), ("walked_at", .real),
        ]),
        ImportedTable(name: "remote_deletions", columns: [
            ("destination", .text), ("deleted_at", .real), ("count", .integer),
        ]),
        ImportedTable(name: "verifications", columns: [
            ("destination", .text), ("verified_at", .real), ("checked", .integer), ("missing", .integer),
            ("different", .integer), ("extra", .integer), ("errors", .integer), ("repaired", .integer),
        ]),
    ]

    /// Rows of one multi-row insert: well under PostgreSQL's 65,535 bound values with the widest table (22 columns).
    static let importBatch = 500

    /// Copies what `other` (another ledger, usually the SQLite state file a config used before it moved to
    /// PostgreSQL) knows of files and destinations into this one, in one durable transaction: all of it or, on an
    /// error, nothing. The rows keep their statuses, attempts, times, receipts and hashes, so that the first run on
    /// this ledger sends only what the old one had not delivered. This ledger must hold no rows of files or
    /// destinations yet (an import would mix two histories): checked inside the transaction. Rows are read from
    /// `other` as a stream and written in batches, so memory does not grow with the number of files.
    public func importRows(from other: Ledger) async throws -> ImportCounts {
        try await offThread { [self] in
            try other.blockingRead { source in
                try blockingDurably { target in
                    let files = try target.fetchOne("SELECT count(*) FROM files", [])?.int(0) ?? 0
                    let destinations = try target.fetchOne("SELECT count(*) FROM destinations", [])?.int(0) ?? 0
                    guard files == 0 && destinations == 0 else {
                        throw LedgerError(path: path, message: "already holds \(files) file rows and \(destinations) destination states; import into a ledger no run has written to")
                    }
                    var counts = ImportCounts()
                    for table in Ledger.importedTables {
                        let copied = try Ledger.copy(table, from: source, to: target)
                        switch table.name {
                        case "files": counts.files = copied
                        case "destinations": counts.destinations = copied
                        case "resume_state": counts.resumableUploads = copied
                        case "source_roots": counts.sourceRoots = copied
                        case "remote_deletions": counts.deletionRecords = copied
                        default: counts.verifications = copied
                        }
                    }
                    return counts
                }
            }
        }
    }

    private static func copy(_ table: ImportedTable, from source: any LedgerConnection, to target: any LedgerConnection) throws -> Int {
        let names = table.columns.map(\.0).joined(separator: ", ")
        let placeholders = "(" + Array(repeating: "?", count: table.columns.count).joined(separator: ", ") + ")"
        var batch: [LedgerValue] = []
        batch.reserveCapacity(importBatch * table.columns.count)
        var rows = 0
        var pending = 0
        func flush() throws {
            guard pending > 0 else { return }
            let values = Array(repeating: placeholders, count: pending).joined(separator: ", ")
            try target.execute("INSERT INTO \(table.name) (\(names)) VALUES \(values)", batch)
            batch.removeAll(keepingCapacity: true)
            pending = 0
        }
        try source.forEachRow("SELECT \(names) FROM \(table.name)", []) { row in
            for (index, column) in table.columns.enumerated() {
                switch column.1 {
                case .text: batch.append(row.string(index).map(LedgerValue.text) ?? .null)
                case .integer: batch.append(row.int64(index).map(LedgerValue.integer) ?? .null)
                case .real: batch.append(row.double(index).map(LedgerValue.real) ?? .null)
                }
            }
            pending += 1
            rows += 1
            if pending == importBatch { try flush() }
        }
        try flush()
        return rows
    }
}
