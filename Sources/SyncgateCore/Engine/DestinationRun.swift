import Foundation
import Logging

/// One destination's part of a sync: delivers its plans wave after wave (see ``PlanningPass``) through one
/// ``DeliveryLayer`` and one ``LedgerRecorder``, then ends the destination's batch.
///
/// Each wave is recorded `pending` in one transaction before any of its uploads start. Waves are staged one after
/// another, and sent one after another; only ``send(_:)`` touches the delivery layer, so the state here needs no
/// lock.
final class DestinationRun: @unchecked Sendable {
    let destination: DestinationConfig
    let ledger: Ledger
    let clock: any SyncClock
    let logger: Logger
    let random: @Sendable (ClosedRange<Double>) -> Double
    let operations: OperationList
    let options: SyncOptions
    let cancellation: CancellationHandle
    let tally: SummaryTally
    let observe: @Sendable (DeliveryEvent) -> Void
    private var delivery: (layer: DeliveryLayer, recorder: LedgerRecorder)?

    init(_ destination: DestinationConfig, ledger: Ledger, clock: any SyncClock, logger: Logger,
         random: @escaping @Sendable (ClosedRange<Double>) -> Double, operations: OperationList, options: SyncOptions,
         cancellation: CancellationHandle, tally: SummaryTally, observe: @escaping @Sendable (DeliveryEvent) -> Void) {
        self.destination = destination
        self.ledger = ledger
        self.clock = clock
        self.logger = logger
        self.random = random
        self.operations = operations
        self.options = options
        self.cancellation = cancellation
        self.tally = tally
        self.observe = observe
    }

    private func event(_ plan: PlannedDelivery, _ kind: DeliveryEvent.Kind) -> DeliveryEvent {
        DeliveryEvent(file: plan.file.key, destination: destination.name, size: plan.file.size, kind: kind, time: clock.now())
    }

    /// Delivers the waves `feed` hands destination `index`, each staged (recorded pending) while the one before it
    /// is sent, then ends the destination's run (``finish()``), also when a wave failed.
    func deliver(_ feed: WaveFeed, index: Int) async throws {
        defer { feed.leave(index) }
        var sending: Task<Void, any Error>? = nil
        do {
            for await wave in feed.waves[index] {
                feed.took(index)
                if cancellation.isCancelled { break }
                let items = try await stage(wave)
                try await sending?.value
                sending = nil
                if cancellation.isCancelled { break }
                sending = Task { try await send(items) }
            }
            try await sending?.value
        } catch {
            _ = try? await sending?.value
            try? await finish()
            throw error
        }
        try await finish()
    }

    /// Readies one wave of plans: counts it, records its files `pending` (and fails those that cannot be sent),
    /// and returns what is to be uploaded (nothing in a dry run). The next wave is readied while this one is sent
    /// (``send(_:)``), so that the ledger's transaction and the destination's preparation do not hold up uploads.
    private func stage(_ outcome: DestinationPlanner.Outcome) async throws -> [UploadItem] {
        let plugin = destination.destination
        var plans = outcome.plans
        let now = clock.now()

        if options.dryRun {
            for plan in plans {
                switch plan.action {
                case .upload(let reason): observe(event(plan, .queued(reason: reason)))
                case .skip(let reason, _): observe(event(plan, .skipped(reason: reason)))
                case .fail(let failure): observe(event(plan, .failed(failure)))
                }
            }
            tally.update { $0.planned += plans.filter(\.isUpload).count }
            return []
        }
        tally.update { summary in
            summary.upToDate += outcome.upToDate
            summary.failedRetryable += outcome.stillFailedRetryable
            summary.failedPermanently += outcome.stillFailedPermanently
        }

        // Touched files with the same bytes: refresh the stat so the next run does not hash them again.
        for file in outcome.touched {
            try ledger.refreshMetadata(file.key, destination: destination.name, size: file.size, modificationTime: file.modificationTime, at: now)
        }

        // Record everything that will be attempted as pending, in one transaction, before any upload.
        let toRecord = plans.filter { if case .skip = $0.action { return false } else { return true } }
        try ledger.recordPending(toRecord.map { plan in
            Ledger.Pending(
                file: plan.file.key, destination: destination.name, size: plan.file.size, modificationTime: plan.file.modificationTime,
                sha256: plan.sha256, contentChanged: plan.entry?.sha256 != nil && plan.sha256 != nil && plan.entry?.sha256 != plan.sha256
            )
        }, at: now)

        // Receipts of earlier deliveries, for the files sent again (the plan read none).
        let receipts = try ledger.receipts(plans.filter { $0.isUpload && $0.entry != nil }.map(\.file.key), destination: destination.name)
        var items: [UploadItem] = []
        for plan in plans where plan.isUpload {
            let entry = plan.entry
            items.append(UploadItem(
                source: plan.file.source, relativePath: plan.file.relativePath, absolutePath: plan.file.absolutePath,
                remoteName: plan.remoteName ?? plan.file.relativePath, size: plan.file.size, modificationTime: plan.file.modificationTime,
                sha256: plan.sha256 ?? "", isArtwork: plan.isArtwork,
                previousReceipt: receipts[plan.file.key],
                outcomeUnknown: entry.map { $0.status != .synced && $0.attempts > 0 } ?? false
            ))
        }

        // Files the destination rejects before the batch (no space): they fail alone.
        if !items.isEmpty, let rejected = try? await plugin.prepare(items), !rejected.isEmpty {
            for index in plans.indices {
                guard plans[index].isUpload, let name = plans[index].remoteName, let error = rejected[name] else { continue }
                plans[index].action = .fail(DeliveryFailure(message: Redactor.shared.redact(error.description), failureClass: error.failureClass, code: error.code, attempts: 0))
            }
            items.removeAll { rejected[$0.remoteName] != nil }
        }

        let retry = destination.settings.retry
        for plan in plans {
            switch plan.action {
            case .upload(let reason):
                observe(event(plan, .queued(reason: reason)))
            case .skip:
                break  // counted and reported while planning
            case .fail(let failure):
                try ledger.markFailed(plan.file.key, destination: destination.name, failure: failure, retry: retry, at: clock.now())
                tally.update { summary in
                    summary.failed += 1
                    if failure.failureClass.isRetryable { summary.failedRetryable += 1 } else { summary.failedPermanently += 1 }
                }
                observe(event(plan, .failed(failure)))
            }
        }
        tally.update { $0.planned += items.count }
        return items
    }

    /// Uploads a staged wave through the destination's delivery layer.
    private func send(_ items: [UploadItem]) async throws {
        guard !items.isEmpty else { return }
        let (layer, recorder) = deliveryLayer()
        recorder.expect(items)
        let grace = options.interruptGrace
        let cancellation = self.cancellation
        // Uploads run in a child task so that an interruption can cut them off after the grace period.
        let transfer = Task { await layer.uploadMany(items, cancellation: cancellation) { progress in recorder.progress(progress) } }
        let watchdog = Task {
            while !cancellation.isCancelled { try await Task.sleep(for: .milliseconds(50)) }
            try await Task.sleep(for: grace)
            transfer.cancel()
        }
        _ = await transfer.value
        watchdog.cancel()
        if let error = recorder.firstError { throw error }
    }

    /// The destination's delivery layer and recorder, made for its first wave with uploads.
    private func deliveryLayer() -> (DeliveryLayer, LedgerRecorder) {
        if let delivery { return delivery }
        let plugin = destination.destination
        let operations = self.operations, observe = self.observe
        let recorder = LedgerRecorder(ledger: ledger, destination: destination.name, retry: destination.settings.retry, clock: clock, tally: tally,
                                      attemptMarksMustBeDurable: !plugin.resendIsHarmless,
                                      makeDurable: { try plugin.makeDurable() }, observe: { event in operations.apply(event); observe(event) }, logger: logger)
        let layer = DeliveryLayer(
            destinationName: destination.name, destination: plugin, settings: destination.settings, clock: clock,
            random: random, onEvent: { event in await recorder.record(event) }
        )
        delivery = (layer, recorder)
        return (layer, recorder)
    }

    /// Ends the destination's run: the last outcomes written, then the destination's batch ended.
    private func finish() async throws {
        var failure: (any Error)? = nil
        if let recorder = delivery?.recorder {
            recorder.flush()
            failure = recorder.firstError
        }
        await destination.destination.finish()
        if let failure { throw failure }
    }
}
