import Foundation
import Synchronization

/// Marks `removed` the ledger's files that a full walk of their source did not find and that are truly gone: an
/// `lstat` of the path says it does not exist while the source's folder is there. A file left out for another
/// reason (excluded, unrouted, in a folder the walk could not read, a symbolic link not followed) still exists and
/// keeps its rows as they are; a missing or unmounted-and-removed source folder marks nothing. The files of a source
/// that a ``SourceJudge`` judges wait for its verdict at the end of its walk (``settle(_:verdict:)``).
///
/// The walk hands over keys as it passes their rows (``missing(_:)``, ``present(_:)``); the checks and writes run
/// in batches on a queue of their own, at most two batches behind, so that neither the walk's read transaction nor
/// its memory grows with the number of files removed.
///
/// Unchecked: the batches and `waiting` are touched only by the one thread that walks (the batch jobs get copies);
/// what the jobs on `queue` share with it is behind `outcome`.
final class RemovalDetector: @unchecked Sendable {
    static let batchSize = 1024

    private let ledger: Ledger
    private let roots: [String: String]
    private let now: Date
    private let queue = DispatchQueue(label: "syncgate.removals")
    private let slots = DispatchSemaphore(value: 2)
    private var missingBatch: [FileKey] = []
    private var presentBatch: [FileKey] = []
    private var lastMissing: FileKey?
    private var lastPresent: FileKey?
    /// The first ledger error of a batch job, and the files the jobs marked removed.
    private let outcome = Mutex<(firstError: (any Error)?, markedFiles: Int)>((nil, 0))
    /// Sources whose files not found wait for the source's verdict (``settle(_:verdict:)``), with those files; and
    /// sources whose files not found are passed over (held back already). Both touched by the walk's thread only.
    private let holding: Set<String>
    private let skipping: Set<String>
    private var waiting: [String: [FileKey]] = [:]

    init(ledger: Ledger, sources: [SourceConfig], now: Date, holding: Set<String> = [], skipping: Set<String> = []) {
        self.ledger = ledger
        self.roots = Dictionary(sources.map { ($0.name, $0.path) }) { a, _ in a }
        self.now = now
        self.holding = holding
        self.skipping = skipping
    }

    /// A row whose file the walk passed without finding it (its rows come one after another: noted once).
    func missing(_ key: FileKey) {
        guard key != lastMissing else { return }
        lastMissing = key
        if skipping.contains(key.source) { return }
        if holding.contains(key.source) {
            waiting[key.source, default: []].append(key)
            return
        }
        missingBatch.append(key)
        if missingBatch.count >= RemovalDetector.batchSize { flushMissing() }
    }

    /// The walk of a held source ended: `verdict` gets how many of its files not found are gone, and says whether
    /// they may be marked removed. A source not settled (a walk cut short) marks nothing.
    func settle(_ source: String, verdict: (Int) -> Bool) {
        let keys = waiting.removeValue(forKey: source) ?? []
        let goneKeys = gone(keys)
        guard verdict(goneKeys.count) else { return }
        for key in goneKeys {
            missingBatch.append(key)
            if missingBatch.count >= RemovalDetector.batchSize { flushMissing() }
        }
    }

    /// A row marked removed whose file the walk found again.
    func present(_ key: FileKey) {
        guard key != lastPresent else { return }
        lastPresent = key
        presentBatch.append(key)
        if presentBatch.count >= RemovalDetector.batchSize { flushPresent() }
    }

    /// Waits for the batches handed over; returns the files marked removed, or throws the first ledger error.
    func finish() throws -> Int {
        flushMissing()
        flushPresent()
        queue.sync {}
        let (firstError, markedFiles) = outcome.withLock { $0 }
        if let firstError { throw firstError }
        return markedFiles
    }

    private func flushMissing() {
        guard !missingBatch.isEmpty else { return }
        let batch = missingBatch
        missingBatch = []
        submit { [self] in
            let marked = try ledger.markRemoved(gone(batch), at: now)
            outcome.withLock { $0.markedFiles += marked }
        }
    }

    private func flushPresent() {
        guard !presentBatch.isEmpty else { return }
        let batch = presentBatch
        presentBatch = []
        submit { [self] in
            // Looked at again with no move under way: a walk may have seen a file just before a mover marked it and
            // deleted it, and its mark must stay then.
            try AfterSyncMover.running.withLock { _ in
                let absent = Set(gone(batch))
                try ledger.clearRemoved(batch.filter { !absent.contains($0) }, at: now)
            }
        }
    }

    private func submit(_ work: @escaping @Sendable () throws -> Void) {
        slots.wait()
        queue.async { [self] in
            defer { slots.signal() }
            do {
                try work()
            } catch {
                outcome.withLock { if $0.firstError == nil { $0.firstError = error } }
            }
        }
    }

    /// The files that are not there while their source folder is (each source's folder looked at once per batch).
    private func gone(_ batch: [FileKey]) -> [FileKey] {
        var folderThere: [String: Bool] = [:]
        return batch.filter { key in
            guard let root = roots[key.source] else { return false }
            if folderThere[key.source] == nil { folderThere[key.source] = RemovalDetector.isFolder(root) }
            guard folderThere[key.source] == true else { return false }
            return RemovalDetector.isMissing(root + "/" + key.path)
        }
    }

    /// Whether `lstat` finds nothing at `path` (no such file, or a folder on its way is not one).
    static func isMissing(_ path: String) -> Bool {
        var info = stat()
        if lstat(path, &info) == 0 { return false }
        return errno == ENOENT || errno == ENOTDIR
    }

    static func isFolder(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }
}
