import Foundation

/// Wraps a destination with everything a plugin never does itself: retries with exponential backoff and jitter
/// (artwork and other files with their own counts), Retry-After, permanent errors not retried, a per-attempt
/// timeout, bounded concurrency, byte progress, cancellation, and a per-file error map. It reports every step as a
/// ``DeliveryEvent``; the engine turns those into ledger rows and output.
public struct DeliveryLayer: Sendable {
    public let destinationName: String
    public let destination: any Destination
    public let settings: DeliverySettings
    public let clock: any SyncClock
    public let backoff: Backoff
    let onEvent: @Sendable (DeliveryEvent) async -> Void
    let watchdog = AttemptWatchdog()

    public init(
        destinationName: String, destination: any Destination, settings: DeliverySettings,
        clock: any SyncClock = SystemClock(),
        random: @escaping @Sendable (ClosedRange<Double>) -> Double = { Double.random(in: $0) },
        onEvent: @escaping @Sendable (DeliveryEvent) async -> Void = { _ in }
    ) {
        self.destinationName = destinationName
        self.destination = destination
        self.settings = settings
        self.clock = clock
        self.backoff = Backoff(settings: settings.retry, random: random)
        self.onEvent = onEvent
    }

    // MARK: - One file

    /// Delivers one file, retrying as configured. Returns the receipt or the final failure.
    public func deliver(
        _ item: UploadItem, cancellation: CancellationHandle = CancellationHandle(),
        progress: @escaping @Sendable (Int64) -> Void = { _ in }
    ) async -> Result<Receipt, DeliveryFailure> {
        let retries = settings.retry.retries(isArtwork: item.isArtwork)
        // Failure counts start afresh on a new connection, but a run never makes more than this many attempts.
        let attemptCap = (retries + 1) * DeliveryLayer.connectionResetLimit
        var attempt = 0
        var retriesUsed = 0
        var deferredWait = Duration.zero
        var generationOfLastFailure: Int? = nil

        if item.outcomeUnknown, let existing = try? await destination.existingCopy(of: item) {
            var receipt = existing
            receipt.sha256 = item.sha256
            await emit(item, .synced(receipt: receipt, attempts: 0, uploaded: false))
            return .success(receipt)
        }

        while true {
            if cancellation.isCancelled || Task.isCancelled {
                let failure = DeliveryFailure.cancelled(attempts: attempt)
                await emit(item, .failed(failure))
                return .failure(failure)
            }
            attempt += 1
            await emit(item, .started(attempt: attempt))
            do {
                var receipt = try await attemptUpload(item, progress: progress)
                try FileChangeCheck.verifyUnchanged(item)
                if !item.sha256.isEmpty { receipt.sha256 = item.sha256 }  // else: the destination hashed what it sent
                await emit(item, .synced(receipt: receipt, attempts: attempt, uploaded: true))
                return .success(receipt)
            } catch {
                let classification = classify(error)
                let failureClass = classification.failureClass
                let failure = DeliveryFailure(
                    message: Redactor.shared.redact(DeliveryLayer.describe(error)), failureClass: failureClass,
                    scope: classification.scope, code: (error as? DestinationError)?.code, attempts: attempt
                )
                let interrupted = cancellation.isCancelled || Task.isCancelled
                if failureClass.isRetryable {
                    let generation = await destination.connectionGeneration
                    if let previous = generationOfLastFailure, previous != generation, attempt < attemptCap { retriesUsed = 0 }
                    generationOfLastFailure = generation
                }
                if error is FileChangedError {
                    // Sending the same planned version again cannot help: the next run plans the new content.
                    await emit(item, .failed(failure))
                    return .failure(failure)
                }
                if case .retryable(let after?) = failureClass, after > maximumWait, !interrupted {
                    // Honoured by scheduling, not by sleeping: a later run tries again no sooner than asked.
                    var scheduled = failure
                    scheduled.retryAfter = after
                    await emit(item, .failed(scheduled))
                    return .failure(scheduled)
                }
                switch failureClass {
                case .permanent:
                    await emit(item, .failed(failure))
                    return .failure(failure)
                case .deferred(let after) where !interrupted && deferredWait < settings.attemptTimeout:
                    // The destination asks to wait: not a burnt retry, bounded by the attempt timeout in total.
                    let delay = after ?? settings.retry.baseDelay
                    deferredWait += delay
                    await emit(item, .retrying(attempt: attempt, error: failure, delay: delay))
                    if (try? await clock.sleep(for: delay)) == nil { continue }
                case .retryable(let after) where !interrupted && retriesUsed < retries,
                    .deferred(let after) where !interrupted && retriesUsed < retries:
                    retriesUsed += 1
                    let delay = backoff.delay(forRetry: retriesUsed, retryAfter: after)
                    await emit(item, .retrying(attempt: attempt, error: failure, delay: delay))
                    if (try? await clock.sleep(for: delay)) == nil { continue }
                default:
                    await emit(item, .failed(interrupted ? .cancelled(attempts: attempt) : failure))
                    return .failure(interrupted ? .cancelled(attempts: attempt) : failure)
                }
            }
        }
    }

    /// The destination's own classification, with the core's for errors it leaves alone.
    func classify(_ error: any Error) -> Classification {
        if error is AttemptTimeoutError || error is FileChangedError { return Classification.of(error) }
        return destination.classify(error)
    }

    private func attemptUpload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt {
        let destination = self.destination
        // The attempt timeout is a safety net in real time, whatever clock backoff uses.
        return try await watchdog.run(timeout: settings.attemptTimeout) { try await destination.upload(item, progress: progress) }
    }

    private func emit(_ item: UploadItem, _ kind: DeliveryEvent.Kind) async {
        await onEvent(DeliveryEvent(file: item.key, destination: destinationName, size: item.size, kind: kind, time: clock.now()))
    }

    /// The longest a server's Retry-After is waited for within a run (`max_delay`, at least a minute); a longer one
    /// ends the file's attempts for this run and schedules the next no sooner.
    public var maximumWait: Duration { max(settings.retry.maxDelay, .seconds(60)) }

    /// How many times a file's retry count may start afresh on new connections within one run.
    public static let connectionResetLimit = 4

    // MARK: - Many files

    /// Uploads many files, at most `concurrency` at once, reporting byte progress over the whole batch. Ends with
    /// the per-file error map (empty when everything was delivered). Cancelling through the progress value's
    /// handle stops new files and retries from starting; they end with a `cancelled` failure.
    public func uploadMany(
        _ items: [UploadItem], cancellation: CancellationHandle = CancellationHandle(),
        progress: @escaping @Sendable (TransferProgress) -> Void = { _ in }
    ) async -> [FileKey: DeliveryFailure] {
        let tally = ProgressTally(files: items.count, total: items.reduce(0) { $0 + $1.size })
        let concurrency = max(1, settings.concurrency)
        return await withTaskGroup(of: (FileKey, DeliveryFailure?).self) { group in
            var failures: [FileKey: DeliveryFailure] = [:]
            var next = 0
            func startNext() {
                guard next < items.count else { return }
                let item = items[next]
                let index = next
                next += 1
                group.addTask {
                    let result = await deliver(item, cancellation: cancellation) { bytes in
                        let (done, total) = tally.set(index, bytes)
                        progress(TransferProgress(
                            file: item.key, fractionCompleted: total > 0 ? Double(done) / Double(total) : 1,
                            bytesDone: done, bytesTotal: total, fileBytesDone: bytes, fileBytesTotal: item.size, error: nil,
                            cancellation: cancellation
                        ))
                    }
                    switch result {
                    case .success:
                        let (done, total) = tally.set(index, item.size)
                        progress(TransferProgress(
                            file: item.key, fractionCompleted: total > 0 ? Double(done) / Double(total) : 1,
                            bytesDone: done, bytesTotal: total, fileBytesDone: item.size, fileBytesTotal: item.size, error: nil,
                            cancellation: cancellation
                        ))
                        return (item.key, nil)
                    case .failure(let failure):
                        let (done, total) = tally.set(index, 0)
                        progress(TransferProgress(
                            file: item.key, fractionCompleted: total > 0 ? Double(done) / Double(total) : 1,
                            bytesDone: done, bytesTotal: total, fileBytesDone: 0, fileBytesTotal: item.size, error: failure,
                            cancellation: cancellation
                        ))
                        return (item.key, failure)
                    }
                }
            }
            for _ in 0..<min(concurrency, items.count) { startNext() }
            while let (key, failure) = await group.next() {
                if let failure { failures[key] = failure }
                startNext()
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

    /// Deletes through the destination's batch call, retrying the names that failed retryably.
    private func deleteInBatches(_ names: [String], cancellation: CancellationHandle) async -> [String: DeliveryFailure] {
        var failures: [String: DeliveryFailure] = [:]
        var remaining = names
        var attempt = 0
        while !remaining.isEmpty {
            if cancellation.isCancelled {
                for name in remaining { failures[name] = .cancelled(attempts: attempt) }
                break
            }
            attempt += 1
            var retryable: [String: DeliveryFailure] = [:]
            var after: Duration? = nil
            do {
                for (name, error) in try await destination.delete(remoteNames: remaining) {
                    let failure = DeliveryFailure(message: Redactor.shared.redact(error.description), failureClass: error.failureClass, code: error.code, attempts: attempt)
                    if error.failureClass.isRetryable { retryable[name] = failure } else { failures[name] = failure }
                    if case .retryable(let a?) = error.failureClass { after = max(after ?? .zero, a) }
                }
            } catch {
                let failureClass = classify(error).failureClass
                let failure = DeliveryFailure(message: Redactor.shared.redact(DeliveryLayer.describe(error)), failureClass: failureClass,
                                              code: (error as? DestinationError)?.code, attempts: attempt)
                for name in remaining {
                    if failureClass.isRetryable { retryable[name] = failure } else { failures[name] = failure }
                }
                if case .retryable(let a?) = failureClass { after = a }
            }
            remaining = names.filter { retryable[$0] != nil }
            if remaining.isEmpty { break }
            if attempt > settings.retry.file {
                for (name, failure) in retryable { failures[name] = failure }
                break
            }
            if (try? await clock.sleep(for: backoff.delay(forRetry: attempt, retryAfter: after))) == nil { continue }
        }
        return failures
    }

    private func deleteOne(_ name: String, cancellation: CancellationHandle) async -> DeliveryFailure? {
        var attempt = 0
        while true {
            if cancellation.isCancelled { return .cancelled(attempts: attempt) }
            attempt += 1
            do {
                try await destination.delete(remoteName: name)
                return nil
            } catch {
                let failureClass = classify(error).failureClass
                let failure = DeliveryFailure(
                    message: Redactor.shared.redact(DeliveryLayer.describe(error)), failureClass: failureClass,
                    code: (error as? DestinationError)?.code, attempts: attempt
                )
                guard failureClass.isRetryable, attempt <= settings.retry.file else { return failure }
                let after: Duration? = if case .retryable(let a) = failureClass { a } else { nil }
                if (try? await clock.sleep(for: backoff.delay(forRetry: attempt, retryAfter: after))) == nil { continue }
                return failure
            }
        }
    }

    /// An error's text for the ledger: a plugin's message, or the error's own description.
    public static func describe(_ error: any Error) -> String {
        if let error = error as? DestinationError { return error.description }
        if let error = error as? POSIXError { return "\(error.code): \(String(cString: strerror(error.code.rawValue)))" }
        return String(describing: error)
    }
}

/// Bytes done per file across a batch, by the file's index in it.
final class ProgressTally: @unchecked Sendable {
    private let lock = NSLock()
    private var perFile: [Int64]
    private var done: Int64 = 0
    let total: Int64

    init(files: Int, total: Int64) {
        self.perFile = [Int64](repeating: 0, count: files)
        self.total = total
    }

    func set(_ index: Int, _ bytes: Int64) -> (Int64, Int64) {
        lock.lock()
        defer { lock.unlock() }
        done += bytes - perFile[index]
        perFile[index] = bytes
        return (done, total)
    }
}
