import Foundation
import Logging
import Synchronization

/// Turns delivery events into ledger rows, counts and observer calls.
final class LedgerRecorder: Sendable {
    let ledger: Ledger
    let destination: String
    let retry: RetrySettings
    let clock: any SyncClock
    let tally: SummaryTally
    let observe: @Sendable (DeliveryEvent) -> Void
    let logger: Logger
    let metrics: DeliveryMetrics
    /// Whether each attempt's start is written (with what gathered) before its upload; see
    /// ``Destination/resendIsHarmless``.
    let attemptMarksMustBeDurable: Bool
    /// The destination's flush, run before a batch that records files synced (``Destination/makeDurable()``).
    let makeDurable: @Sendable () throws -> Void
    private let state = Mutex(State())
    /// Held while a batch is taken and written (see ``takeAndWrite()``); it guards no value, only that order.
    private let writeLock = Mutex(())

    private struct State {
        // Rates of writes and events: measured on the monotonic clock (the events' times are the run's clock's).
        var lastProgressWrite: [FileKey: ContinuousClock.Instant] = [:]
        var lastProgressEvent: [FileKey: ContinuousClock.Instant] = [:]
        var error: (any Error)?
        /// Outcomes waiting to be written (see ``LedgerRecorder/batchSize``).
        var batch: [Ledger.Update] = []
        var lastFlush = ContinuousClock.now
        /// Whether a write is queued on `writer` and has not started taking the batch yet.
        var writerScheduled = false
        /// Whether a write is scheduled for when the batch falls due by time alone.
        var laterScheduled = false
    }

    init(ledger: Ledger, destination: String, retry: RetrySettings, clock: any SyncClock, tally: SummaryTally,
         attemptMarksMustBeDurable: Bool = true, makeDurable: @escaping @Sendable () throws -> Void = {},
         observe: @escaping @Sendable (DeliveryEvent) -> Void, logger: Logger) {
        self.attemptMarksMustBeDurable = attemptMarksMustBeDurable
        self.makeDurable = makeDurable
        self.metrics = DeliveryMetrics(destination: destination)
        self.ledger = ledger
        self.destination = destination
        self.retry = retry
        self.clock = clock
        self.tally = tally
        self.observe = observe
        self.logger = logger
    }

    var firstError: (any Error)? { state.withLock { $0.error } }

    /// Forgets the progress marks of a file whose outcome is recorded.
    private func settled(_ file: FileKey) {
        state.withLock { state in
            state.lastProgressWrite[file] = nil
            state.lastProgressEvent[file] = nil
        }
    }

    /// Outcomes waiting to be written: when 4,096 have gathered or a second has passed, with an attempt's start
    /// that must be durable, and at the end (``flush()``). Losing them in a crash only means the files are sent
    /// again. Few large batches matter where each one costs a flush of the destination's file system (`syncfs`
    /// commits its journal): 20,000 small local files took 10-15% longer in batches of 128 or a quarter second.
    static let batchSize = 4096
    static let batchInterval: TimeInterval = 1
    /// Writes due batches, one at a time, off the cooperative thread pool.
    private let writer = DispatchQueue(label: "syncgate.ledger-recorder")

    func record(_ event: DeliveryEvent) async {
        do {
            switch event.kind {
            case .started:
                // Where a resend could duplicate, the attempt must be on disk before the upload starts: one
                // transaction with what gathered. Elsewhere it joins the next batch.
                try await write(taking: [.uploading(event.file, destination: destination, at: event.time)], force: attemptMarksMustBeDurable)
            case .retrying(_, let failure, _):
                try await write(taking: [.retryNote(event.file, destination: destination, error: failure.message, at: event.time)], force: false)
            case .synced(let receipt, _, let uploaded):
                settled(event.file)
                let recorded = event.item == nil ? try await ledger.entry(event.file, destination: destination)?.modificationTime : nil
                let modificationTime = event.item?.modificationTime ?? recorded
                try await write(taking: [.synced(event.file, destination: destination, receipt: receipt, size: event.size,
                                           modificationTime: modificationTime ?? event.time, sha256: receipt.sha256, at: event.time)], force: false)
                tally.update { summary in
                    if uploaded {
                        summary.uploaded += 1
                        summary.bytesUploaded += event.size
                    } else {
                        summary.alreadyPresent += 1
                    }
                }
            case .failed(let failure):
                settled(event.file)
                if failure.isCancellation {
                    try await write(taking: [.interrupted(event.file, destination: destination, at: event.time)], force: false)
                } else {
                    try await write(taking: [.failed(event.file, destination: destination, failure: failure, retry: retry, at: event.time)], force: false)
                    tally.update { summary in
                        summary.failed += 1
                        if failure.failureClass.isRetryable { summary.failedRetryable += 1 } else { summary.failedPermanently += 1 }
                    }
                }
            case .waiting(_, let attemptCut):
                settled(event.file)
                // A file that waited before any attempt is pending already; one whose attempt was cut short is set
                // back to pending with that attempt not counted.
                if attemptCut { try await write(taking: [.waiting(event.file, destination: destination, uncount: true, at: event.time)], force: false) }
                tally.update { $0.waiting += 1 }
            case .gone:
                settled(event.file)
                try await write(taking: [.gone(event.file, destination: destination, at: event.time)], force: false)
                tally.update { $0.goneFiles.insert(event.file) }
            case .queued, .progress, .skipped:
                break
            }
        } catch {
            fail(error)
        }
        metrics.record(event)
        observe(event)
    }

    private func write(taking updates: [Ledger.Update], force: Bool) async throws {
        let (due, later): (Bool, Bool) = state.withLock { state in
            state.batch += updates
            guard !force, !state.writerScheduled else { return (false, false) }
            if state.batch.count >= LedgerRecorder.batchSize || ContinuousClock.now - state.lastFlush >= .seconds(LedgerRecorder.batchInterval) {
                state.writerScheduled = true
                return (true, false)
            }
            // Not due yet: make sure it is written within the interval even if nothing else happens (one long
            // upload), so that `status` does not show finished files as still uploading.
            if !state.batch.isEmpty && !state.laterScheduled {
                state.laterScheduled = true
                return (false, true)
            }
            return (false, false)
        }
        if later {
            // Weak: a recorder whose run has ended (and flushed) must not be kept alive, with its ledger, by a timer.
            writer.asyncAfter(deadline: .now() + LedgerRecorder.batchInterval) { [weak self] in
                guard let self else { return }
                state.withLock { $0.laterScheduled = false }
                do {
                    try writeLock.withLock { _ in try takeAndWrite() }
                } catch {
                    fail(error)
                }
            }
        }
        if force {
            // On the ledger's threads: the uploading task waits for its write, its cooperative thread does not.
            try await ledger.offThread { [self] in try writeLock.withLock { _ in try takeAndWrite() } }
        } else if due {
            // A batch that is merely due is written on the recorder's own queue, not on the uploading task's
            // thread: the destination's flush (a `syncfs`) and SQLite then overlap with the next uploads instead
            // of holding one of the few cooperative threads.
            writer.async { [self] in
                state.withLock { $0.writerScheduled = false }
                do {
                    try writeLock.withLock { _ in try takeAndWrite() }
                } catch {
                    fail(error)
                }
            }
        }
    }

    /// Takes what gathered and writes it; the caller holds `writeLock`. Batches are taken and written under that
    /// one lock, so they reach the ledger in the order they were taken: a file's "uploading" mark in one batch can
    /// never land after its "synced" row in a later one.
    private func takeAndWrite() throws {
        let toWrite: [Ledger.Update] = state.withLock { state in
            let all = state.batch
            state.batch.removeAll(keepingCapacity: true)
            state.lastFlush = ContinuousClock.now
            return all
        }
        guard !toWrite.isEmpty else { return }
        if toWrite.contains(where: \.recordsSynced) { try makeDurable() }
        try ledger.apply(toWrite)
    }

    /// Writes whatever gathered (at the end of a destination's run).
    func flush() async {
        do {
            try await ledger.offThread { [self] in writer.sync {} }  // a write queued earlier goes first
            try await write(taking: [], force: true)
        } catch {
            fail(error)
        }
    }

    /// This instance lost its hold on the ledger (``Ledger/fenceRefusal(destination:needsOneWriter:token:)``): the
    /// run's uploads stop, and it ends with a temporary ledger error (exit 75; a gateway tries again at its next pass).
    func fenced(_ why: String) {
        let first = state.withLock { $0.error == nil }
        guard first else { return }
        fail(LedgerError(path: ledger.path, message: "uploads to \(destination) stopped: \(why)", temporary: true))
    }

    private func fail(_ error: any Error) {
        // A lost state file is reported once, by the command the run's error reaches; every later write fails the
        // same way, and saying so per write only buries that one line.
        if (error as? LedgerError)?.stateLost != true { logger.error("cannot write the state ledger: \(error)") }
        state.withLock { if $0.error == nil { $0.error = error } }
    }

    /// Byte progress: written to the ledger about once a second per file, to observers about 4 times a second.
    func progress(_ progress: TransferProgress) {
        guard progress.error == nil, progress.fileBytesDone < progress.fileBytesTotal else { return }
        let now = ContinuousClock.now
        let key = progress.file
        let (writeLedger, emit) = state.withLock { state -> (Bool, Bool) in
            let w = state.lastProgressWrite[key].map { now - $0 >= .seconds(1) } ?? true
            let e = state.lastProgressEvent[key].map { now - $0 >= .milliseconds(250) } ?? true
            if w { state.lastProgressWrite[key] = now }
            if e { state.lastProgressEvent[key] = now }
            return (w, e)
        }
        if writeLedger { try? ledger.markProgress(key, destination: destination, bytes: progress.fileBytesDone) }
        if emit {
            observe(DeliveryEvent(file: key, destination: destination, size: progress.fileBytesTotal, kind: .progress(bytes: progress.fileBytesDone), time: clock.now()))
        }
    }
}
