import Foundation
import Logging
import Synchronization

/// One destination's part of a sync: gets it ready (a probe when it was away, its listing when that is the
/// truth), delivers its plans wave after wave (see ``PlanningPass``) through one ``DeliveryLayer`` and one
/// ``LedgerRecorder``, then ends the destination's batch and records its state (``DestinationState``).
///
/// Each wave is recorded `pending` in one transaction before any of its uploads start. Waves are staged one after
/// another, and sent one after another; only ``send(_:)`` touches the delivery layer. While the destination is unavailable or blocked (its ``CircuitBreaker`` is open) waves are still recorded,
/// so that `status` counts the files that wait, but nothing is sent.
final class DestinationRun: Sendable {
    let destination: DestinationConfig
    /// Whether two files can end up under one name here (``GatewayConfig/namesCanClash(at:)``).
    let namesCanClash: Bool
    let ledger: Ledger
    let clock: any SyncClock
    let logger: Logger
    let random: @Sendable (ClosedRange<Double>) -> Double
    let operations: OperationList
    /// The sources held back: nothing of them is deleted here (``SourceJudge``).
    let holds: SourceHolds
    let options: SyncOptions
    let cancellation: CancellationHandle
    let tally: SummaryTally
    let observe: @Sendable (DeliveryEvent) -> Void
    /// The destination's state as the ledger had it when the run started (nil: never tried).
    let record: DestinationRecord?
    /// Open once the destination is found away; shared with the delivery layer.
    let breaker: CircuitBreaker
    /// The fence as the run started (see ``Ledger/fenceRefusal(destination:needsOneWriter:token:)``): a lapse
    /// during the run stops its uploads for good.
    let fenceToken: LeaseFence.Token
    /// The delivery layer and recorder, made for the first wave with uploads (``deliveryLayer()``).
    private let delivery = Mutex<(layer: DeliveryLayer, recorder: LedgerRecorder)?>(nil)
    /// The delivery counters of waits decided before any upload (the recorder counts the others).
    let metrics: DeliveryMetrics
    /// Probe and listing, started with the run, awaited before the first wave is staged.
    let readiness = Mutex<Task<Readiness, Never>?>(nil)
    /// Whether the destination answered in this run (a probe, its listing, an upload).
    let contact = ContactFlag()
    /// Whether the breaker was opened by the state the ledger already had (blocked with unchanged settings, or a
    /// gateway's probe not due yet): nothing new was learnt, so the state is not written again.
    let awayAsRecorded = ContactFlag()

    /// What the run knows before it sends: the destination's listing when that is the truth (nil: trust the ledger).
    struct Readiness: Sendable {
        var listing: Set<ExactString>?
    }

    init(_ destination: DestinationConfig, namesCanClash: Bool, record: DestinationRecord?, ledger: Ledger, clock: any SyncClock, logger: Logger,
         random: @escaping @Sendable (ClosedRange<Double>) -> Double, operations: OperationList, holds: SourceHolds, options: SyncOptions,
         cancellation: CancellationHandle, tally: SummaryTally, observe: @escaping @Sendable (DeliveryEvent) -> Void) {
        self.destination = destination
        self.metrics = DeliveryMetrics(destination: destination.name)
        self.breaker = CircuitBreaker(waitLimit: destination.settings.unavailableWait, concurrency: destination.settings.concurrency, clock: clock)
        self.fenceToken = ledger.fenceToken()
        self.namesCanClash = namesCanClash
        self.record = record
        self.ledger = ledger
        self.clock = clock
        self.logger = logger
        self.random = random
        self.operations = operations
        self.holds = holds
        self.options = options
        self.cancellation = cancellation
        self.tally = tally
        self.observe = observe
    }

    private func event(_ plan: PlannedDelivery, _ kind: DeliveryEvent.Kind) -> DeliveryEvent {
        DeliveryEvent(file: plan.file.key, destination: destination.name, size: plan.file.size, kind: kind, time: clock.now())
    }

    // MARK: - Waves

    /// Delivers the waves `feed` hands destination `index`, each staged (recorded pending) while the one before it
    /// is sent, then ends the destination's run (``finish()``), also when a wave failed.
    func deliver(_ feed: WaveFeed, index: Int) async throws {
        defer { feed.leave(index) }
        var sending: Task<Void, any Error>? = nil
        do {
            while let wave = await feed.nextWave(index) {
                if cancellation.isCancelled { break }
                let tiers = try await stage(wave)
                try await sending?.value
                sending = nil
                if cancellation.isCancelled { break }
                sending = Task { for tier in tiers { try await send(tier) } }
            }
            try await sending?.value
            try await handleRemovals()
        } catch {
            _ = try? await sending?.value
            try? await finish()
            throw error
        }
        try await finish()
    }

    /// Readies one wave of plans: counts it, records its files `pending` (and fails those that cannot be sent),
    /// and returns what is to be uploaded (nothing in a dry run, nor while the destination is away), in the
    /// destination's order, cut into the tiers that are sent one after another (``DeliveryOrder``). The next wave
    /// is readied while this one is sent (``send(_:)``), so that the ledger's transaction and the destination's
    /// preparation do not hold up uploads.
    private func stage(_ outcome: DestinationPlanner.Outcome) async throws -> [[UploadItem]] {
        let plugin = destination.destination
        var plans = outcome.plans
        let now = clock.now()

        if options.dryRun {
            for plan in plans {
                switch plan.action {
                case .upload(let reason): observe(event(plan, .queued(reason: reason)))
                case .skip(let reason): observe(event(plan, .skipped(reason: reason)))
                case .fail(let failure): observe(event(plan, .failed(failure)))
                }
            }
            for plan in outcome.unverified { observe(event(plan, .skipped(reason: .upToDate))) }
            tally.update {
                $0.planned += plans.filter(\.isUpload).count
                $0.upToDate += outcome.unverified.count
                $0.noteTooNew(outcome.tooNew)
            }
            return []
        }
        let readiness = await readiness.withLock({ $0 })?.value ?? Readiness()
        plans += confirm(outcome.unverified, listing: readiness.listing)
        tally.update { summary in
            summary.noteTooNew(outcome.tooNew)
            summary.upToDate += outcome.upToDate
            summary.failedRetryable += outcome.stillFailedRetryable
            summary.failedPermanently += outcome.stillFailedPermanently
        }
        let away = breaker.failure

        // Touched files with the same bytes: refresh the stat so the next run does not hash them again.
        for file in outcome.touched {
            try await ledger.refreshMetadata(file.key, destination: destination.name, size: file.size, modificationTime: file.modificationTime, at: now)
        }

        // Record everything that will be attempted as pending, in one transaction, before any upload. While the
        // destination is away, files that failed before keep their failure (and its retry schedule).
        let toRecord = plans.filter { plan in
            if case .skip = plan.action { return false }
            return away == nil || plan.entry?.status != .failed
        }
        let taken = try await ledger.recordPending(toRecord.map { plan in
            var unlessSynced = true
            if case .upload(let reason) = plan.action, reason == .changed || reason == .missingAtDestination { unlessSynced = false }
            return Ledger.Pending(
                file: plan.file.key, destination: destination.name, size: plan.file.size, modificationTime: plan.file.modificationTime,
                sha256: plan.sha256, contentChanged: plan.entry?.sha256 != nil && plan.sha256 != nil && plan.entry?.sha256 != plan.sha256,
                unlessSynced: unlessSynced
            )
        }, at: now)
        // Files another instance holds (a shared ledger), or has delivered since they were planned: theirs, not ours.
        let notOurs = Set(zip(toRecord, taken).compactMap { $1 ? nil : $0.file.key })
        if !notOurs.isEmpty { plans.removeAll { notOurs.contains($0.file.key) } }

        var items: [UploadItem] = []
        let order = destination.order
        var priorities: [FileKey: Int] = [:]
        for plan in plans where plan.isUpload {
            let entry = plan.entry
            if plan.priority != 0 { priorities[plan.file.key] = plan.priority }
            items.append(UploadItem(
                source: plan.file.source, relativePath: plan.file.relativePath, absolutePath: plan.file.absolutePath,
                remoteName: plan.remoteName ?? plan.file.relativePath, size: plan.file.size, modificationTime: plan.file.modificationTime,
                sha256: plan.sha256 ?? "", isArtwork: plan.isArtwork,
                outcomeUnknown: entry.map { entry in
                    let takenOver = ledger.takenOver.take(plan.file.key, destination: destination.name)
                    return takenOver || DestinationRun.outcomeUnknown(entry, instanceID: ledger.instanceID)
                } ?? plugin.checksNewFiles
            ))
        }

        // Files the destination rejects before the batch (no space): they fail alone, or wait when the reason is
        // the destination's (full now).
        var waitingForSpace: [String: DestinationError] = [:]
        if away == nil, !items.isEmpty, let rejected = try? await plugin.prepare(items), !rejected.isEmpty {
            for index in plans.indices {
                guard plans[index].isUpload, let name = plans[index].remoteName, let error = rejected[name] else { continue }
                if error.scope == .destination {
                    waitingForSpace[name] = error
                } else {
                    plans[index].action = .fail(DeliveryFailure(message: Redactor.shared.redact(error.description), failureClass: error.failureClass,
                                                                code: error.code, attempts: 0))
                }
            }
            items.removeAll { rejected[$0.remoteName] != nil }
        }

        let retry = destination.settings.retry
        for plan in plans {
            switch plan.action {
            case .upload(let reason):
                observe(event(plan, .queued(reason: reason)))
                let waitFor = away ?? waitingForSpace[plan.remoteName ?? ""].map {
                    DeliveryFailure(message: Redactor.shared.redact($0.description), failureClass: $0.failureClass, scope: .destination, code: $0.code, attempts: 0)
                }
                if let waitFor {
                    let waiting = event(plan, .waiting(waitFor, attemptCut: false))
                    metrics.record(waiting)
                    observe(waiting)
                    tally.update { $0.waiting += 1 }
                }
            case .skip:
                break  // counted and reported while planning
            case .fail(let failure):
                try await ledger.markFailed(plan.file.key, destination: destination.name, failure: failure, retry: retry, at: clock.now())
                tally.update { summary in
                    summary.failed += 1
                    if failure.failureClass.isRetryable { summary.failedRetryable += 1 } else { summary.failedPermanently += 1 }
                }
                observe(event(plan, .failed(failure)))
            }
        }
        if away != nil { return [] }
        tally.update { $0.planned += items.count }
        return order.tiers(items) { DeliveryOrder.Fields($0, priority: priorities[$0.key] ?? 0) }
    }

    /// Files the ledger says are delivered, checked against the destination's listing: those it lacks are planned
    /// again ("missing at destination"); the others are reported up to date. Without a listing the ledger is
    /// trusted.
    private func confirm(_ unverified: [PlannedDelivery], listing: Set<ExactString>?) -> [PlannedDelivery] {
        var resend: [PlannedDelivery] = []
        var confirmed = 0
        for plan in unverified {
            guard let listing, let name = plan.remoteName, !listing.contains(ExactString(name)) else {
                observe(event(plan, .skipped(reason: .upToDate)))
                confirmed += 1
                continue
            }
            var again = plan
            again.action = .upload(.missingAtDestination)
            if !destination.destination.hashesWhileSending {
                do {
                    again.sha256 = try FileHasher.sha256(path: plan.file.absolutePath, sizeHint: plan.file.size)
                } catch {
                    again.action = .fail(DeliveryFailure(message: DeliveryLayer.describe(error), failureClass: .retryable(), code: "unreadable", attempts: 0))
                }
            } else {
                again.sha256 = nil
            }
            resend.append(again)
        }
        tally.update { $0.upToDate += confirmed }
        return resend
    }

    /// Uploads a staged wave through the destination's delivery layer.
    private func send(_ items: [UploadItem]) async throws {
        guard !items.isEmpty else { return }
        let (layer, recorder) = deliveryLayer()
        let grace = options.interruptGrace
        let cancellation = self.cancellation
        // Uploads run in a child task so that an interruption can cut them off after the grace period.
        let transfer = Task { await layer.uploadMany(items, cancellation: cancellation) { progress in recorder.progress(progress) } }
        let fenced = fenceCheck(recorder)
        let watchdog = Task {
            while !cancellation.isCancelled {
                // An instance that can no longer confirm its hold on the ledger cuts its uploads off at once, before
                // its leases can end and another instance take the files.
                if fenced() != nil {
                    transfer.cancel()
                    return
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            try await Task.sleep(for: grace)
            transfer.cancel()
        }
        _ = await transfer.value
        watchdog.cancel()
        if let error = recorder.firstError { throw error }
    }

    /// The destination's delivery layer and recorder, made for its first wave with uploads.
    func deliveryLayer() -> (DeliveryLayer, LedgerRecorder) {
        if let made = delivery.withLock({ $0 }) { return made }
        let plugin = destination.destination
        let operations = self.operations, observe = self.observe, contact = self.contact
        let recorder = LedgerRecorder(ledger: ledger, destination: destination.name, retry: destination.settings.retry, clock: clock, tally: tally,
                                      attemptMarksMustBeDurable: !plugin.resendIsHarmless,
                                      makeDurable: { try plugin.makeDurable() }, observe: { event in
                                          switch event.kind {
                                          case .synced: contact.set()
                                          case .failed(let failure) where failure.scope == .file && !failure.isCancellation: contact.set()
                                          default: break
                                          }
                                          operations.apply(event)
                                          observe(event)
                                      }, logger: logger)
        let fenced = fenceCheck(recorder)
        plugin.useWriteFence { fenced() }
        let layer = DeliveryLayer(
            destinationName: destination.name, destination: plugin, settings: destination.settings, clock: clock, breaker: breaker,
            limits: destination.limits, random: random, onEvent: { event in await recorder.record(event) }, mayStart: fenced
        )
        delivery.withLock { $0 = (layer, recorder) }
        return (layer, recorder)
    }

    /// Whether an upload may start now: nil, or the refusal of the fence (noted by the recorder, which ends the run with
    /// a temporary ledger error).
    private func fenceCheck(_ recorder: LedgerRecorder) -> @Sendable () -> DeliveryFailure? {
        let ledger = self.ledger, name = destination.name, oneWriter = destination.destination.needsOneWriter, token = fenceToken
        return {
            guard let why = ledger.fenceRefusal(destination: name, needsOneWriter: oneWriter, token: token) else { return nil }
            recorder.fenced(why)
            return DeliveryFailure(message: "not sent: \(why)", failureClass: .retryable(), scope: .destination, code: "fenced", attempts: 0)
        }
    }

    // MARK: - Ending

    /// Ends the destination's run: the last outcomes written, the destination's batch ended, its state recorded.
    private func finish() async throws {
        var failure: (any Error)? = nil
        if let recorder = delivery.withLock({ $0 })?.recorder {
            await recorder.flush()
            failure = recorder.firstError
        }
        if !options.isGatewayPass { await destination.destination.finish() }
        // Rows this instance recorded but did not send (the destination away, the run interrupted) are free again.
        // After a failed run too (its fence lapsed, a ledger write failed), as far as the ledger can be written: its
        // uploads have ended, and a claim kept would be renewed by this instance's lease keeper for as long as it
        // lives, so that a gateway whose next pass no longer covers the row (its share of a split walk changed)
        // would hold it from the fleet for good.
        if !options.dryRun {
            if failure == nil {
                try await ledger.releaseClaims(destination: destination.name)
            } else {
                try? await ledger.releaseClaims(destination: destination.name)
            }
        }
        if failure == nil, !options.dryRun { try await recordState() }
        if let failure { throw failure }
    }

    /// Writes the destination's state: away (with why, and the files that wait for it) or available again.
    private func recordState() async throws {
        let now = clock.now()
        guard let away = breaker.failure else {
            if contact.isSet { try await ledger.markAvailable(destination.name, at: now) }
            return
        }
        let state: DestinationState = away.failureClass.isRetryable ? .unavailable : .blocked
        if !awayAsRecorded.isSet {
            try await ledger.markAway(destination.name, state: state, error: away.message, code: away.code,
                                fingerprint: state == .blocked ? destination.fingerprint : nil, probeFailed: true,
                                probeIntervalMax: destination.settings.probeIntervalMax, retryAfter: away.failureClass.retryAfter, at: now)
        }
        let since = try await ledger.destinationRecords()[destination.name]?.since ?? now
        let waiting = try await ledger.counts()[destination.name].map { ($0[.pending] ?? 0) + ($0[.uploading] ?? 0) } ?? 0
        tally.update {
            $0.away.append(SyncSummary.AwayDestination(name: destination.name, state: state, since: since, error: away.message,
                                                       code: away.code, waiting: waiting))
        }
        let verb = state == .blocked ? "blocked" : "unavailable"
        logger.info("\(destination.name): \(verb) (\(away.message)); \(waiting) file(s) wait for it")
    }

    /// Whether a row's copy may already be at the destination though the ledger does not say it was delivered: an
    /// attempt was recorded, or the row is claimed by another instance (its lease ended: a process killed, or one
    /// that stepped back; claims dropped at a run's start are in ``Ledger/takenOver``), which may have sent it before
    /// it could record so (where a resend is harmless, attempt starts are written in batches, and outcomes always
    /// are). Such files are first looked for at the destination, where it can say so cheaply
    /// (``Destination/existingCopy(of:)``), and sent only when it does not hold them.
    static func outcomeUnknown(_ entry: LedgerEntry, instanceID: String) -> Bool {
        guard entry.status != .synced else { return false }
        if entry.attempts > 0 { return true }
        if let holder = entry.claimedBy, holder != instanceID { return true }
        return false
    }
}
