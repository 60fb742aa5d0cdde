import Foundation

/// The header row of a destination's sheet, as known in this run: read once (`values.get` of the range's first
/// row) on first use and shared by every file; when the row is empty, written once (by the first file that needs
/// it) with that file's columns. Callers that arrive while it is being read or written wait for that.
///
/// A header write whose outcome is unknown (no answer) forgets what is known, so that the next caller reads the
/// row again instead of writing a second header.
actor SheetHeader {
    private var known: [String]?
    private var pending: Task<[String], any Error>?
    /// Reads of the header row made so far (for tests and logs).
    private(set) var reads = 0
    /// Header rows written so far.
    private(set) var writes = 0

    /// The header: known, or read with `read`; when the row read is empty and `write` is given, `write` is called
    /// with the caller's columns and they become the header.
    func header(
        columns: [String]?, read: @escaping @Sendable () async throws -> [String],
        write: (@Sendable ([String]) async throws -> Void)?
    ) async throws -> [String] {
        while true {
            if let known, !(known.isEmpty && columns != nil && write != nil) { return known }
            if let pending {
                do {
                    _ = try await pending.value
                } catch {
                    if self.pending == pending { self.pending = nil }
                    throw error
                }
                continue
            }
            let task = Task { [weak self] () throws -> [String] in
                guard let self else { return [] }
                let header = try await self.readOrWrite(columns: columns, read: read, write: write)
                return header
            }
            pending = task
            do {
                let header = try await task.value
                if pending == task { pending = nil }
                return header
            } catch {
                if pending == task { pending = nil }
                throw error
            }
        }
    }

    private func readOrWrite(
        columns: [String]?, read: @Sendable () async throws -> [String], write: (@Sendable ([String]) async throws -> Void)?
    ) async throws -> [String] {
        var header = known ?? []
        if known == nil {
            reads += 1
            let row = try await read()
            header = row.allSatisfy { $0.trimmingCharacters(in: .whitespaces).isEmpty } ? [] : row
            known = header
        }
        guard header.isEmpty, let columns, let write else { return header }
        do {
            try await write(columns)
        } catch {
            known = nil  // whether it landed is not known (or it was refused): read the row again next time
            throw error
        }
        writes += 1
        known = columns
        return columns
    }
}
