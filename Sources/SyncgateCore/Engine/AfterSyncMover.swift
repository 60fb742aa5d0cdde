import Foundation
import Logging

/// Deletes source files once every destination they are routed to holds them (`after_sync: delete`, a move).
///
/// A file is deleted only when, in the ledger, its row at every destination it is routed to is `synced`, and the
/// file on disk is still exactly what was delivered: same size and modification time, and the same SHA-256 (it is
/// read once more). Its rows are then marked `moved` and that mark is made durable (the ledger's write-ahead log
/// flushed: the `synced` rows before it with it) before the file is unlinked, the same inode that was checked. A
/// crash at any moment thus leaves either the file, or a durable record that every destination holds it.
struct AfterSyncMover {
    let config: GatewayConfig
    let ledger: Ledger
    let clock: any SyncClock
    let logger: Logger

    /// Files checked and deleted per durable mark.
    static let batchSize = 256
    /// One mover at a time in a process (a gateway's destinations end their passes independently), and no walk's
    /// "found again" while one is under way (``RemovalDetector``).
    static let running = NSLock()

    /// A file every destination holds, with what was delivered.
    private struct Candidate {
        var key: FileKey
        var size: Int64
        var modificationTime: Date
        var sha256: Set<String>
    }

    /// Runs over every source some of whose files are deleted after delivery; returns the files deleted and the
    /// failures (one line each).
    func run(cancellation: CancellationHandle) throws -> (moved: Int, failures: [String]) {
        AfterSyncMover.running.lock()
        defer { AfterSyncMover.running.unlock() }
        var moved = 0
        var failures: [String] = []
        for name in config.sourcesDeletingAfterSync {
            guard let source = config.sources.first(where: { $0.name == name }), source.checkFolder() == nil else { continue }
            let candidates = try delivered(source)
            var index = 0
            while index < candidates.count, !cancellation.isCancelled {
                let batch = candidates[index..<min(candidates.count, index + AfterSyncMover.batchSize)]
                index += batch.count
                let checked = batch.compactMap { candidate -> (Candidate, FileIdentity)? in
                    unchanged(candidate, in: source).map { (candidate, $0) }
                }
                guard !checked.isEmpty else { continue }
                try ledger.markMoved(checked.map(\.0.key), at: clock.now())
                var kept: [FileKey] = []
                for (candidate, identity) in checked {
                    let path = source.path + "/" + candidate.key.path
                    switch AfterSyncMover.unlink(path, expected: identity) {
                    case .deleted:
                        moved += 1
                        logger.info("\(source.name): deleted \(candidate.key.path), delivered to every destination (after_sync: delete)")
                    case .alreadyGone:
                        break  // deleted meanwhile by someone else: every destination holds it all the same
                    case .changed:
                        kept.append(candidate.key)
                    case .failed(let problem):
                        kept.append(candidate.key)
                        failures.append("\(source.name)/\(candidate.key.path): \(problem)")
                        logger.error("\(source.name): cannot delete \(candidate.key.path) after delivery: \(problem)")
                    }
                }
                // Files still there (changed in the meantime, or not deletable) are not `moved`.
                try ledger.clearMoved(kept)
            }
        }
        return (moved, failures)
    }

    /// The source's files whose rows at every destination they are routed to are `synced`, in key order.
    private func delivered(_ source: SourceConfig) throws -> [Candidate] {
        var result: [Candidate] = []
        try ledger.withPresentRows(source: source.name) { rows in
            while let key = rows.key {
                var synced: [String: LedgerEntry] = [:]
                while rows.key == key {
                    if let destination = rows.destination, rows.status == .synced, let entry = rows.entry() { synced[destination] = entry }
                    try rows.advance()
                }
                guard config.deletesAfterSync(source: key.source, relativePath: key.path) else { continue }
                let routed = config.destinations(forSource: key.source, relativePath: key.path)
                guard !routed.isEmpty, routed.allSatisfy({ synced[$0] != nil }) else { continue }
                let entries = routed.compactMap { synced[$0] }
                guard let first = entries.first,
                      entries.allSatisfy({ $0.size == first.size && FileStat.sameModificationTime($0.modificationTime, first.modificationTime) })
                else { continue }
                result.append(Candidate(key: key, size: first.size, modificationTime: first.modificationTime,
                                        sha256: Set(entries.compactMap(\.sha256))))
            }
        }
        return result
    }

    /// The file's identity when it is still what was delivered (size, time, and content); nil otherwise.
    private func unchanged(_ candidate: Candidate, in source: SourceConfig) -> FileIdentity? {
        guard let file = SourceScanner().file(at: candidate.key.path, in: source),
              file.size == candidate.size, FileStat.sameModificationTime(file.modificationTime, candidate.modificationTime),
              let before = FileIdentity(path: file.absolutePath), candidate.sha256.count <= 1
        else { return nil }
        if let expected = candidate.sha256.first {
            guard let sha = try? FileHasher.sha256(path: file.absolutePath, sizeHint: file.size), sha == expected else { return nil }
        }
        // Not written while it was read.
        guard FileIdentity(path: file.absolutePath) == before else { return nil }
        return before
    }

    private enum Unlinked {
        case deleted, alreadyGone, changed
        case failed(String)
    }

    /// Unlinks `path` if it is still the file checked; a file changed since stays, quietly (it is sent again).
    private static func unlink(_ path: String, expected: FileIdentity) -> Unlinked {
        guard let current = FileIdentity(path: path) else { return .alreadyGone }
        guard current == expected else { return .changed }
        if Glibc.unlink(path) == 0 { return .deleted }
        let code = errno
        if code == ENOENT { return .alreadyGone }
        return .failed(String(cString: strerror(code)))
    }
}
