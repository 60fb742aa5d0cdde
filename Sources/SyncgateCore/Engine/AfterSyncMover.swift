import Foundation
import Logging
import Synchronization

/// Deletes source files once every destination they are routed to holds them (`after_sync: delete`, a move).
///
/// A file is deleted only when, in the ledger, its row at every destination it is routed to is `synced`, and the
/// file on disk is still exactly what was delivered: same size and modification time, and the same SHA-256 (it is
/// read once more). Its rows are then marked `moved` and that mark is made durable (the ledger's write-ahead log
/// flushed: the `synced` rows before it with it) before the file is unlinked, the same inode that was checked,
/// reached from the source's folder without following a link (``BeneathRoot``). A crash at any moment thus leaves
/// either the file, or a durable record that every destination holds it. Where source folders overlap
/// (``SourceOverlaps``), every source that reaches the file must have delivered it everywhere it routes it.
struct AfterSyncMover {
    let config: GatewayConfig
    let ledger: Ledger
    let clock: any SyncClock
    let logger: Logger

    /// Files checked and deleted per durable mark.
    static let batchSize = 256
    /// One mover at a time in a process (a gateway's destinations end their passes independently), and no walk's
    /// "found again" while one is under way (``RemovalDetector``).
    static let running = Mutex(())

    /// A file every destination holds, with what was delivered.
    private struct Candidate {
        var key: FileKey
        var size: Int64
        var modificationTime: Date
        var sha256: Set<String>
        /// The same physical file as other sources whose folders overlap this one's name it: their rows are
        /// marked with its own.
        var alsoAs: [FileKey] = []
    }

    /// Runs over every source some of whose files are deleted after delivery; returns the files deleted and the
    /// failures (one line each). Blocks its thread (it reads the ledger, hashes files and unlinks them): a task
    /// runs it on the ledger's threads (``Ledger/offThread(_:)``).
    func run(cancellation: CancellationHandle) throws -> (moved: Int, failures: [String]) {
        try AfterSyncMover.running.withLock { _ in try moveDelivered(cancellation: cancellation) }
    }

    private func moveDelivered(cancellation: CancellationHandle) throws -> (moved: Int, failures: [String]) {
        var moved = 0
        var failures: [String] = []
        // Sources whose folders overlap (one inside another, or the same): decided once per run.
        let overlaps = SourceOverlaps(sources: config.sources)
        for name in config.sourcesDeletingAfterSync {
            guard let source = config.sources.first(where: { $0.name == name }), source.checkFolder() == nil else { continue }
            var candidates = try delivered(source)
            if let others = overlaps.bySource[name] {
                candidates = try candidates.compactMap { try deliveredByOthers($0, overlaps: others) }
            }
            let root = BeneathRoot(root: source.path)
            var index = 0
            while index < candidates.count, !cancellation.isCancelled {
                let batch = candidates[index..<min(candidates.count, index + AfterSyncMover.batchSize)]
                index += batch.count
                let checked = batch.compactMap { candidate -> (Candidate, FileIdentity)? in
                    unchanged(candidate, in: source, root: root).map { (candidate, $0) }
                }
                guard !checked.isEmpty else { continue }
                try ledger.markMoved(checked.flatMap { [$0.0.key] + $0.0.alsoAs }, at: clock.now())
                var kept: [FileKey] = []
                for (candidate, identity) in checked {
                    switch AfterSyncMover.unlink(candidate.key.path, below: root, expected: identity) {
                    case .deleted:
                        moved += 1
                        logger.info("\(source.name): deleted \(candidate.key.path), delivered to every destination (after_sync: delete)")
                    case .alreadyGone:
                        break  // deleted meanwhile by someone else: every destination holds it all the same
                    case .changed:
                        kept += [candidate.key] + candidate.alsoAs
                    case .link(let reached):
                        kept += [candidate.key] + candidate.alsoAs
                        logger.info("\(source.name): kept \(candidate.key.path): \(reached) is a symbolic link now, and a move never unlinks through one")
                    case .failed(let problem):
                        kept += [candidate.key] + candidate.alsoAs
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

    /// The candidate, with the keys other sources give it, when every source whose folder overlaps its own and
    /// that selects and routes the file holds it `synced` at each destination it routes it to, as the same version
    /// (size and time); nil otherwise. A source with no row yet for a destination it routes the file to has not
    /// delivered it there.
    private func deliveredByOthers(_ candidate: Candidate, overlaps: [SourceOverlaps.Overlap]) throws -> Candidate? {
        var result = candidate
        for overlap in overlaps {
            guard let path = overlap.path(inOther: candidate.key.path),
                  let other = config.sources.first(where: { $0.name == overlap.other }),
                  SourceOverlaps.selects(other, path)
            else { continue }
            let key = FileKey(source: other.name, path: path)
            for destination in config.destinations(forSource: other.name, relativePath: path) {
                guard let entry = try ledger.blockingEntry(key, destination: destination), entry.status == .synced,
                      entry.size == candidate.size, FileStat.sameModificationTime(entry.modificationTime, candidate.modificationTime)
                else {
                    logger.debug("\(candidate.key.source): \(candidate.key.path) kept: source \(other.name) has not delivered it to \(destination) yet")
                    return nil
                }
                if let sha = entry.sha256 { result.sha256.insert(sha) }
            }
            result.alsoAs.append(key)
        }
        return result
    }

    /// The file's identity when it is still what was delivered (size, time, and content); nil otherwise. It is read
    /// through the no-follow walk the unlink takes (``BeneathRoot``), so what is hashed is what would be unlinked.
    private func unchanged(_ candidate: Candidate, in source: SourceConfig, root: BeneathRoot) -> FileIdentity? {
        guard let file = SourceScanner().file(at: candidate.key.path, in: source),
              file.size == candidate.size, FileStat.sameModificationTime(file.modificationTime, candidate.modificationTime),
              candidate.sha256.count <= 1
        else { return nil }
        let reader: FileReader, opened: stat
        switch root.openFile(candidate.key.path) {
        case .file(let r, let info): (reader, opened) = (r, info)
        case .link(let reached):
            logger.info("\(source.name): kept \(candidate.key.path): \(reached) is a symbolic link, and a move never unlinks through one")
            return nil
        case .unavailable: return nil
        }
        let before = FileIdentity(opened)
        let seen = FileStat(opened)
        guard seen.size == candidate.size, FileStat.sameModificationTime(seen.modificationTime, candidate.modificationTime) else { return nil }
        if let expected = candidate.sha256.first {
            guard let sha = try? FileHasher.sha256(reader: reader, sizeHint: seen.size), sha == expected else { return nil }
        }
        // Not written while it was read.
        guard let after = reader.status(), FileIdentity(after) == before else { return nil }
        return before
    }

    enum Unlinked: Equatable {
        case deleted, alreadyGone, changed
        /// A symbolic link on the way (the part of the path reached): nothing was unlinked.
        case link(String)
        case failed(String)
    }

    /// Unlinks `relativePath` below `root` if it is still the file checked: reached from the root's descriptor one
    /// name at a time without following links, the name checked (`fstatat`, no follow) and unlinked in the folder
    /// descriptor it was checked in. A file changed since stays, quietly (it is sent again); a link on the way
    /// (a folder swapped for a link to elsewhere, where a hard link of the file may be) unlinks nothing.
    static func unlink(_ relativePath: String, below root: BeneathRoot, expected: FileIdentity) -> Unlinked {
        switch root.openParent(relativePath) {
        case .link(let reached): return .link(reached)
        case .missing: return .alreadyGone
        case .failed(let code): return .failed(String(cString: strerror(code)))
        case .folder(let dirfd, let name):
            defer { close(dirfd) }
            var info = stat()
            guard fstatat(dirfd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                let code = errno
                return code == ENOENT ? .alreadyGone : .failed(String(cString: strerror(code)))
            }
            if info.st_mode & S_IFMT == S_IFLNK { return .link(relativePath) }
            guard FileIdentity(info) == expected else { return .changed }
            if unlinkat(dirfd, name, 0) == 0 { return .deleted }
            let code = errno
            if code == ENOENT { return .alreadyGone }
            return .failed(String(cString: strerror(code)))
        }
    }
}
