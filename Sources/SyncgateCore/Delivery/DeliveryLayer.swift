import Foundation
import Synchronization

/// Wraps a destination with everything a plugin never does itself: retries with exponential backoff and jitter
/// (artwork and other files with their own counts), Retry-After, permanent errors not retried, a per-attempt
/// timeout, bounded concurrency, byte progress, cancellation, and a per-file error map. Errors about the whole
/// destination stop every upload there (``CircuitBreaker``); throttling pauses them and lowers the concurrency
/// (``Throttle``). The destination's `rate`, `min_interval` and `bandwidth` hold its requests, upload starts and
/// bytes (``DeliveryLimits``). It reports every step as a ``DeliveryEvent``; the engine turns those into ledger rows
/// and output.
public struct DeliveryLayer: Sendable {
    public let destinationName: String
    public let destination: any Destination
    public let settings: DeliverySettings
    public let clock: any SyncClock
    /// What comes after a failed attempt (the count of retries is set per piece of work: ``policy(retries:)``).
    public let retryPolicy: RetryPolicy
    /// Open once the destination is found unavailable or blocked: nothing more is tried there.
    public let breaker: CircuitBreaker
    /// Pauses and paces the destination while it throttles.
    public let throttle: Throttle
    /// The destination's rate and bandwidth limits (shared with everything else that uses the destination).
    public let limits: DeliveryLimits
    let onEvent: @Sendable (DeliveryEvent) async -> Void
    /// Asked right before each upload attempt is sent: a failure refuses it (the caller's fence, see
    /// ``Ledger/fenceRefusal(destination:needsOneWriter:token:)``).
    let mayStart: @Sendable () -> DeliveryFailure?
    let watchdog = AttemptWatchdog()

    public init(
        destinationName: String, destination: any Destination, settings: DeliverySettings,
        clock: any SyncClock = SystemClock(), breaker: CircuitBreaker? = nil, limits: DeliveryLimits? = nil,
        random: @escaping @Sendable (ClosedRange<Double>) -> Double = { Double.random(in: $0) },
        onEvent: @escaping @Sendable (DeliveryEvent) async -> Void = { _ in },
        mayStart: @escaping @Sendable () -> DeliveryFailure? = { nil }
    ) {
        self.mayStart = mayStart
        self.destinationName = destinationName
        self.destination = destination
        self.settings = settings
        self.clock = clock
        self.retryPolicy = RetryPolicy(settings: settings.retry, deferredLimit: settings.attemptTimeout, random: random)
        self.breaker = breaker ?? CircuitBreaker(waitLimit: settings.unavailableWait, concurrency: settings.concurrency, clock: clock)
        self.throttle = Throttle(concurrency: settings.concurrency, budget: settings.throttleWait, clock: clock)
        self.limits = limits ?? DeliveryLimits(settings)
        self.onEvent = onEvent
    }

    // MARK: - One file

    /// Delivers one file, retrying as configured. Returns the receipt or the final failure (a destination-scoped
    /// one when the destination went away: the file then waits, pending).
    public func deliver(
        _ item: UploadItem, cancellation: CancellationHandle = CancellationHandle(),
        progress: @escaping @Sendable (Int64) -> Void = { _ in }
    ) async -> Result<Receipt, DeliveryFailure> {
        await deliver(item, cancellation: cancellation, slots: nil, progress: progress)
    }

    /// ``deliver(_:cancellation:progress:)``, its attempts bounded by `slots` (many files at once).
    func deliver(
        _ item: UploadItem, cancellation: CancellationHandle, slots: AttemptSlots?, progress: @escaping @Sendable (Int64) -> Void
    ) async -> Result<Receipt, DeliveryFailure> {
        if let open = breaker.failure { return await wait(item, open, attemptCut: false) }
        if item.outcomeUnknown {
            switch await existingCopy(of: item, cancellation: cancellation) {
            case .found(let receipt):
                await emit(item, .synced(receipt: receipt, attempts: 0, uploaded: false))
                return .success(receipt)
            case .destinationFailed(let failure):
                return await wait(item, breaker.trip(failure), attemptCut: false)
            case .unknown:
                break
            }
        }
        let verifiesBeforePublishing = destination.verifiesUnchangedBeforePublishing
        let outcome = await withRetries(
            subject: item.key.source + "/" + item.key.path, policy: policy(retries: settings.retry.retries(isArtwork: item.isArtwork)), pacing: .upload,
            cancellation: cancellation, slots: slots,
            started: { attempt in await emit(item, .started(attempt: attempt)) },
            retrying: { attempt, failure, delay in await emit(item, .retrying(attempt: attempt, error: failure, delay: delay)) }
        ) { _ in
            if let refusal = mayStart() { throw refusal }
            do {
                var receipt = try await attemptUpload(item, progress: progress)
                if !verifiesBeforePublishing { try FileChangeCheck.verifyUnchanged(item) }
                if !item.sha256.isEmpty { receipt.sha256 = item.sha256 }  // else: the destination hashed what it sent
                return receipt
            } catch where !Task.isCancelled && !(error is CancellationError) && SourceGone.isGone(item) {
                // Whatever the destination made of the missing file (ENOENT, a plugin's own words), it is gone.
                throw SourceGone.error(item)
            }
        }
        switch outcome {
        case .done(let receipt, let attempts):
            await emit(item, .synced(receipt: receipt, attempts: attempts, uploaded: true))
            return .success(receipt)
        case .waiting(let failure, let attemptCut):
            return await wait(item, failure, attemptCut: attemptCut)
        case .failed(let failure) where failure.code == SourceGone.code:
            await emit(item, .gone)
            return .failure(failure)
        case .failed(let failure):
            await emit(item, .failed(failure))
            return .failure(failure)
        case .cancelled(let attempts):
            let failure = DeliveryFailure.cancelled(attempts: attempts)
            await emit(item, .failed(failure))
            return .failure(failure)
        }
    }

    /// The file waits for its destination: reported, and returned as its failure.
    private func wait(_ item: UploadItem, _ failure: DeliveryFailure, attemptCut: Bool) async -> Result<Receipt, DeliveryFailure> {
        await emit(item, .waiting(failure, attemptCut: attemptCut))
        return .failure(failure)
    }

    private enum ExistingCopy {
        case found(Receipt)
        case destinationFailed(DeliveryFailure)
        case unknown
    }

    /// Asks the destination whether it holds the file already (after an attempt whose outcome was not recorded),
    /// under the attempt's deadline. Anything but a clear answer means "send it".
    private func existingCopy(of item: UploadItem, cancellation: CancellationHandle) async -> ExistingCopy {
        let destination = self.destination
        do {
            try await limits.beforeRequest(clock: clock, cancellation: cancellation)
        } catch {
            return .unknown  // cancelled: the upload loop ends it
        }
        do {
            guard var receipt = try await watchdog.run(timeout: settings.attemptTimeout, { try await destination.existingCopy(of: item) }) else {
                return .unknown
            }
            receipt.sha256 = item.sha256
            return .found(receipt)
        } catch {
            let classification = classify(error)
            guard classification.scope == .destination, !Task.isCancelled else { return .unknown }
            return .destinationFailed(DeliveryFailure(
                message: Redactor.shared.redact(DeliveryLayer.describe(error)), failureClass: classification.failureClass,
                scope: .destination, code: (error as? DestinationError)?.code, attempts: 0))
        }
    }

    /// The destination's own classification, with the core's for errors it leaves alone.
    func classify(_ error: any Error) -> Classification {
        if error is AttemptTimeoutError || error is FileChangedError { return Classification.of(error) }
        return destination.classify(error)
    }

    private func attemptUpload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt {
        let destination = self.destination
        // The attempt timeout is a safety net in real time, whatever clock backoff uses; time its reads wait for the
        // bandwidth limit does not count.
        return try await watchdog.run(timeout: settings.attemptTimeout, limits: limits, clock: clock) {
            try await destination.upload(item, progress: progress)
        }
    }

    private func emit(_ item: UploadItem, _ kind: DeliveryEvent.Kind) async {
        await onEvent(DeliveryEvent(file: item.key, destination: destinationName, size: item.size, kind: kind, time: clock.now(), item: item))
    }

    /// The longest a server's Retry-After is waited for within a run (`max_delay`, at least a minute); a longer one
    /// ends the file's attempts for this run and schedules the next no sooner.
    public var maximumWait: Duration { retryPolicy.maximumWait }

    /// How many times a file's retry count may start afresh on new connections within one run.
    public static var connectionResetLimit: Int { RetryPolicy.connectionResetLimit }

    // MARK: - Many files

    /// Uploads many files, at most `concurrency` at once (fewer while the destination throttles), reporting byte
    /// progress over the whole batch. Ends with the per-file error map (empty when everything was delivered; a
    /// destination-scoped failure for the files left waiting when the destination went away). Cancelling through
    /// the progress value's handle stops new files and retries from starting; they end with a `cancelled` failure.
    public func uploadMany(
        _ items: [UploadItem], cancellation: CancellationHandle = CancellationHandle(),
        progress: @escaping @Sendable (TransferProgress) -> Void = { _ in }
    ) async -> [FileKey: DeliveryFailure] {
        let work = Task { await uploadAll(items, cancellation: cancellation, progress: progress) }
        // When the destination goes away, the uploads in flight end at once (their files wait, pending).
        breaker.onTrip { work.cancel() }
        return await withTaskCancellationHandler { await work.value } onCancel: { work.cancel() }
    }

    private func uploadAll(
        _ items: [UploadItem], cancellation: CancellationHandle, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async -> [FileKey: DeliveryFailure] {
        let tally = ProgressTally(files: items.count, total: items.reduce(0) { $0 + $1.size })
        // Attempts in flight are bounded by the slots; files are started up to twice as many, so that files waiting
        // out a backoff (or the breaker) do not leave the destination idle.
        let throttle = self.throttle
        let slots = AttemptSlots { throttle.limit }
        return await withTaskGroup(of: (FileKey, DeliveryFailure?).self) { group in
            var failures: [FileKey: DeliveryFailure] = [:]
            var next = 0
            var running = 0
            @Sendable func report(_ item: UploadItem, index: Int, bytes: Int64, error: DeliveryFailure?) {
                let (done, total) = tally.set(index, bytes)
                progress(TransferProgress(
                    file: item.key, fractionCompleted: total > 0 ? Double(done) / Double(total) : 1,
                    bytesDone: done, bytesTotal: total, fileBytesDone: bytes, fileBytesTotal: item.size, error: error,
                    cancellation: cancellation
                ))
            }
            func startMore() {
                while next < items.count, running < 2 * throttle.limit {
                    let item = items[next]
                    let index = next
                    next += 1
                    running += 1
                    group.addTask {
                        let result = await deliver(item, cancellation: cancellation, slots: slots) { bytes in report(item, index: index, bytes: bytes, error: nil) }
                        switch result {
                        case .success:
                            report(item, index: index, bytes: item.size, error: nil)
                            return (item.key, nil)
                        case .failure(let failure):
                            report(item, index: index, bytes: 0, error: failure)
                            return (item.key, failure)
                        }
                    }
                }
            }
            startMore()
            while let (key, failure) = await group.next() {
                running -= 1
                if let failure { failures[key] = failure }
                startMore()
            }
            return failures
        }
    }

    /// Deletes many remote names, at most `concurrency` at once, each with the retry policy for files.
    /// Returns the per-name error map (empty when all were deleted).
    public func deleteMany(_ names: [String], cancellation: CancellationHandle = CancellationHandle()) async -> [String: DeliveryFailure] {
        if destination.supportsBatchDelete { return await deleteInBatches(names, cancellation: cancellation) }
        let concurrency = max(1, settings.concurrency)
        return await withTaskGroup(of: (String, DeliveryFailure?).self) { group in
            var failures: [String: DeliveryFailure] = [:]
            var next = 0
            func startNext() {
                guard next < names.count else { return }
                let name = names[next]
                next += 1
                group.addTask { (name, await deleteOne(name, cancellation: cancellation)) }
            }
            for _ in 0..<min(concurrency, names.count) { startNext() }
            while let (name, failure) = await group.next() {
                if let failure { failures[name] = failure }
                startNext()
            }
            return failures
        }
    }

    /// Deletes through the destination's batch call, in the one retry loop: each attempt sends the names not
    /// deleted yet; names refused for good are failed, those refused retryably are tried again.
    private func deleteInBatches(_ names: [String], cancellation: CancellationHandle) async -> [String: DeliveryFailure] {
        var state = BatchDeletion(names)
        let destination = self.destination
        let timeout = settings.attemptTimeout
        let outcome = await withRetries(subject: "delete:" + (names.first ?? ""), policy: policy(retries: settings.retry.file), pacing: .request,
                                        cancellation: cancellation) { attempt in
            let remaining = state.remaining
            let refused = try await watchdog.run(timeout: timeout) { try await destination.delete(remoteNames: remaining) }
            if let retry = state.settle(refused, attempt: attempt) { throw retry }
        }
        return state.failures(after: outcome)
    }

    private func deleteOne(_ name: String, cancellation: CancellationHandle) async -> DeliveryFailure? {
        let destination = self.destination
        let timeout = settings.attemptTimeout
        let outcome = await withRetries(subject: "delete:" + name, policy: policy(retries: settings.retry.file), pacing: .request,
                                        cancellation: cancellation) { _ in
            try await watchdog.run(timeout: timeout) { try await destination.delete(remoteName: name) }
        }
        return outcome.failure
    }

    /// An error's text for the ledger: a plugin's message, or the error's own description.
    public static func describe(_ error: any Error) -> String {
        if let error = error as? DestinationError { return error.description }
        if let error = error as? POSIXError { return "\(error.code): \(String(cString: strerror(error.code.rawValue)))" }
        return String(describing: error)
    }
}

/// Bytes done per file across a batch, by the file's index in it.
final class ProgressTally: Sendable {
    private let state: Mutex<(perFile: [Int64], done: Int64)>
    let total: Int64

    init(files: Int, total: Int64) {
        self.state = Mutex(([Int64](repeating: 0, count: files), 0))
        self.total = total
    }

    func set(_ index: Int, _ bytes: Int64) -> (Int64, Int64) {
        let done = state.withLock { state in
            state.done += bytes - state.perFile[index]
            state.perFile[index] = bytes
            return state.done
        }
        return (done, total)
    }
}
