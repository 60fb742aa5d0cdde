import Foundation
import SyncgateCore

/// Sending a file's rows: batches streamed from the file, the duplicate check, the append and its bookkeeping.
extension SheetsDestination {
    struct Delivery {
        var item: UploadItem
        var ranges: [String] = []
        var appended = 0
        var skipped = 0
        var records = 0
        var seenKeys = Set<String>()
        var known: Set<String>?
        /// Where the file's columns land in the sheet (Sheets API; read before its first append).
        var layout: ColumnLayout?

        var detail: String {
            if ranges.isEmpty && skipped == 0 { return "no records in the file" }
            if ranges.isEmpty { return "no new rows (\(skipped) already present)" }
            var text = ranges.joined(separator: ";")
            if skipped > 0 { text += " (\(skipped) rows already present)" }
            return text
        }
    }

    /// Streams the file's records in batches of `max_rows_per_request` rows, handing each batch, its columns and
    /// the bytes read so far to `body`. Returns the number of records. A malformed record fails the file with
    /// its line number.
    @discardableResult
    func forEachBatch(
        _ item: UploadItem, format: RecordFormat, body: ([SheetRow], [String], Int64) async throws -> Void
    ) async throws -> Int {
        let reader = try RecordReader(path: item.absolutePath, format: format)
        var columns: [String]?
        var strict = false
        var batch: [SheetRow] = []
        var index = 0
        var occurrences: [String: Int] = [:]
        do {
            while let record = try reader.next() {
                if columns == nil {
                    if let header = reader.csvHeader { try builder.checkHeader(header) }
                    columns = builder.columns(csvHeader: reader.csvHeader, firstRecord: record)
                    strict = config.columns == nil && reader.csvHeader == nil
                }
                index += 1
                batch.append(
                    try builder.row(record: record, columns: columns!, strictColumns: strict, item: item, occurrences: &occurrences))
                if batch.count == config.maxRowsPerRequest {
                    try await body(batch, columns!, reader.bytesConsumed)
                    batch.removeAll(keepingCapacity: true)
                }
            }
            if !batch.isEmpty { try await body(batch, columns ?? [], reader.bytesConsumed) }
        } catch let error as RecordError {
            throw DestinationError.permanent("\(item.relativePath): \(error)", code: "malformed-record")
        }
        return index
    }

    /// Runs one write inside the rate limit.
    func limited<T: Sendable>(_ write: () async throws -> T) async throws -> T {
        try await limiter.acquire()
        do {
            let result = try await write()
            await limiter.release()
            return result
        } catch {
            await limiter.release()
            throw error
        }
    }

    /// Sends rows not already in the sheet, as one append (the caller batches).
    ///
    /// Bookkeeping when a request fails: a write that may have been applied (``WriteOutcomeUnknown``, or a
    /// cancellation while it was out) marks the file, so the key column is read afresh before its rows go again;
    /// one fresh read clears the mark. A write refused outright (429, 4xx, nothing listening) leaves the marks as
    /// they are, so a throttled write repeated later costs no extra read. A write counts against the rate limit
    /// whatever its answer (the server counted it too).
    func send(_ rows: [SheetRow], columns: [String], delivery: inout Delivery) async throws {
        var fresh: [SheetRow] = []
        if let sheets {
            if delivery.layout == nil {
                delivery.layout = try await layout(recordColumns: columns, sheets: sheets)
            }
            if delivery.known == nil {
                let recheck = await dedup.hadUnknownOutcome(file: delivery.item.remoteName)
                if recheck {
                    logger.info("rechecking the key column before sending \(delivery.item.relativePath) again", metadata: ["destination": "\(name)"])
                }
                let keyName = config.key ?? SheetsConfig.rowIDColumn
                let keyRange = range.columnBelowHeader(at: delivery.layout?.position(of: keyName) ?? 0)
                delivery.known = try await dedup.keys(fresh: recheck) { try await sheets.column(range: keyRange) }
                if recheck { await dedup.rechecked(file: delivery.item.remoteName) }
            }
        }
        for row in rows {
            if delivery.known?.contains(row.key) == true || !delivery.seenKeys.insert(row.key).inserted {
                delivery.skipped += 1
                continue
            }
            fresh.append(row)
        }
        guard !fresh.isEmpty else { return }
        let file = delivery.item.remoteName
        let layout = delivery.layout
        let cells = fresh.map { layout?.place($0.cells) ?? $0.cells }
        do {
            if let sheets {
                let result = try await limited {
                    // After the rate limit's wait (a fenced instance asks for no token, no connection), and again
                    // when the client is about to send the rows: a process frozen in between must not send them.
                    try writeFence.verify()
                    return try await sheets.append(
                        range: config.range, rows: cells, valueInput: config.valueInput, beforeSending: { try writeFence.verify() })
                }
                delivery.ranges.append(result.updatedRange)
            } else if let appsScript {
                let header = builder.header(recordColumns: columns)
                let outcome = try await limited {
                    try writeFence.verify()
                    return try await appsScript.post(
                        file: file, columns: header, keyIndex: config.keyColumnIndex, rows: cells,
                        beforeSending: { try writeFence.verify() })
                }
                delivery.ranges.append(outcome.range ?? "\(outcome.appended ?? fresh.count) rows via Apps Script")
                if let skipped = outcome.skipped { delivery.skipped += skipped }
            }
        } catch let error as WriteOutcomeUnknown {
            await dedup.outcomeUnknown(file: file)
            throw error.error
        } catch let error as DestinationError {
            throw error  // refused: nothing was applied
        } catch {
            // Cancelled (the attempt timed out, the run was interrupted) while the request may have gone out.
            await dedup.outcomeUnknown(file: file)
            throw error
        }
        delivery.appended += fresh.count
        // (The file's own keys are in delivery.seenKeys; the shared set learns them for the next files.)
        await dedup.appended(fresh.map(\.key))
    }
}
