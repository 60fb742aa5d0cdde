import Foundation
import Logging

/// One pass of the gateway: scan the sources, route each file, decide per destination what to send (from the
/// ledger), record it `pending`, deliver through the ``DeliveryLayer`` and record every outcome.
public final class SyncEngine: Sendable {
    public let config: GatewayConfig
    public let ledger: Ledger
    public let clock: any SyncClock
    let logger: Logger
    let random: @Sendable (ClosedRange<Double>) -> Double
    /// Ongoing, recently completed and recently failed operations of this engine; subscribe with `changes()`.
    public let operations: OperationList

    public init(
        config: GatewayConfig, ledger: Ledger, clock: any SyncClock = SystemClock(), logger: Logger = Logger(label: "syncgate"),
        random: @escaping @Sendable (ClosedRange<Double>) -> Double = { Double.random(in: $0) }
    ) {
        self.config = config
        self.ledger = ledger
        self.clock = clock
        self.logger = logger
        self.random = random
        let recent = Dictionary(config.destinations.map { ($0.name, ($0.settings.recentCompleted, $0.settings.recentFailed)) }) { a, _ in a }
        self.operations = OperationList(
            clock: clock, keepCompleted: { recent[$0]?.0 ?? .seconds(10) }, keepFailed: { recent[$0]?.1 ?? .seconds(60) }
        )
    }

    /// Runs one pass. `observe` gets every event (and may be called from several tasks; it is awaited).
    /// Cancelling `cancellation` stops new uploads; in-flight ones get `interruptGrace` to end and are otherwise
    /// left `pending`.
    public func run(
        _ options: SyncOptions = SyncOptions(), cancellation: CancellationHandle = CancellationHandle(),
        observe: @escaping @Sendable (DeliveryEvent) -> Void = { _ in },
        warn: @escaping @Sendable (ScanWarning) -> Void = { _ in }
    ) async throws -> SyncSummary {
        let started = Date()
        let tally = SummaryTally()
        let destinations = config.destinations.filter { options.destinations.isEmpty || options.destinations.contains($0.name) }

        if !options.dryRun { try ledger.resetInterrupted(at: clock.now()) }

        // 1. Destinations whose listing is the truth (a head unit) are listed first, in parallel.
        var listings: [String: Set<ExactString>] = [:]
        if !options.dryRun {
            await withTaskGroup(of: (String, Set<ExactString>?).self) { group in
                for destination in destinations where destination.destination.listingIsAuthoritative && isRouted(destination.name) {
                    group.addTask {
                        do {
                            return (destination.name, try await destination.destination.list().exactNames)
                        } catch {
                            self.logger.warning("\(destination.name): cannot list the destination (\(Redactor.shared.redact(DeliveryLayer.describe(error)))); trusting the ledger")
                            return (destination.name, nil)
                        }
                    }
                }
                for await (name, names) in group { if let names { listings[name] = names } }
            }
        }

        // 2. Scan and plan in one pass: sources in the byte order of their names, each walked in the byte order of
        // its paths, beside the ledger's rows in the same order. Nothing is kept of a file with nothing to do.
        let now = clock.now()
        let sources = config.sources.sorted { ExactString.compare($0.name, $1.name) < 0 }
        let planners = destinations.map { destination in
            DestinationPlanner(destination, config: config, options: options, remoteNames: listings[destination.name], keepSkipped: false, now: now) { plan in
                if case .skip(let reason, _) = plan.action {
                    observe(DeliveryEvent(file: plan.file.key, destination: destination.name, size: plan.file.size, kind: .skipped(reason: reason), time: self.clock.now()))
                }
            }
        }
        let plannerByName = Dictionary(planners.map { ($0.destination.name, $0) }) { a, _ in a }
        var fileCount = 0
        // The walk runs on its own thread, ahead of the planning here.
        let walk = ScanPipeline(sources: sources)
        defer { walk.stop() }
        try ledger.withRows { rows in
            while let item = walk.next() {
                switch item {
                case .files(let files):
                    for file in files {
                        fileCount += 1
                        let routed = config.destinations(forSource: file.source, relativePath: file.relativePath)
                        guard !routed.isEmpty else { continue }
                        let key = file.key
                        _ = try rows.seek(key)
                        var planned: [String] = []
                        while rows.key == key {
                            if let name = rows.destination, routed.contains(name), let planner = plannerByName[name] {
                                try planner.consider(file, rows: rows, found: true)
                                planned.append(name)
                            }
                            try rows.advance()
                        }
                        for name in routed where !planned.contains(name) {
                            try plannerByName[name]?.consider(file, rows: rows, found: false)
                        }
                    }
                case .finished(_, let warnings):
                    for warning in warnings {
                        warn(warning)
                        tally.update { $0.warnings += 1 }
                    }
                }
            }
        }
        tally.update { $0.files = fileCount }
        let outcomes = try planners.map { planner in
            try planner.outcome { body in try self.scan(sources, routedTo: planner.destination.name, body) }
        }

        // 3. Deliver per destination, destinations in parallel.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for outcome in outcomes {
                group.addTask {
                    try await self.runDestination(outcome, options: options, cancellation: cancellation, tally: tally, observe: observe)
                }
            }
            try await group.waitForAll()
        }

        var summary = tally.value
        summary.interrupted = cancellation.isCancelled
        summary.seconds = Date().timeIntervalSince(started)
        return summary
    }

    /// Plans one destination's files without changing anything (hashes only files whose size or time changed).
    /// Every file gets a plan, in the byte order of (source, path).
    public func plan(_ destination: DestinationConfig, files: [ScannedFile], options: SyncOptions, remoteNames: Set<ExactString>?) throws -> [PlannedDelivery] {
        let ordered = SyncEngine.inKeyOrder(files)
        let planner = DestinationPlanner(destination, config: config, options: options, remoteNames: remoteNames, keepSkipped: true, now: clock.now()) { _ in }
        try ledger.withRows(destination: destination.name) { rows in
            for file in ordered {
                let found = try rows.seek(file.key)
                try planner.consider(file, rows: rows, found: found)
            }
        }
        return try planner.outcome { body in for file in ordered { try body(file) } }.plans
    }

    /// Walks the sources again for the files routed to one destination (a planner settling a repeated name hash).
    private func scan(_ sources: [SourceConfig], routedTo destination: String, _ body: (ScannedFile) throws -> Void) throws {
        for source in sources {
            _ = try SourceScanner().scan(source) { file in
                if config.destinations(forSource: file.source, relativePath: file.relativePath).contains(destination) { try body(file) }
            }
        }
    }

    /// Whether any route sends files to this destination.
    private func isRouted(_ destination: String) -> Bool {
        config.routes.contains { $0.to.contains(destination) }
    }

    /// The files in the byte order of (source, path), as a scan lists them (sorted here only when they are not).
    static func inKeyOrder(_ files: [ScannedFile]) -> [ScannedFile] {
        var ordered = true
        for i in files.indices.dropFirst() where !(files[i - 1].key < files[i].key) {
            ordered = false
            break
        }
        return ordered ? files : files.sorted { $0.key < $1.key }
    }

    private func runDestination(
        _ outcome: DestinationPlanner.Outcome, options: SyncOptions, cancellation: CancellationHandle,
        tally: SummaryTally, observe: @escaping @Sendable (DeliveryEvent) -> Void
    ) async throws {
        let destination = outcome.destination
        let plugin = destination.destination
        var plans = outcome.plans
        func event(_ plan: PlannedDelivery, _ kind: DeliveryEvent.Kind) -> DeliveryEvent {
            DeliveryEvent(file: plan.file.key, destination: destination.name, size: plan.file.size, kind: kind, time: clock.now())
        }
        let upToDate = outcome.upToDate, stillFailedRetryable = outcome.stillFailedRetryable
        let stillFailedPermanently = outcome.stillFailedPermanently, touched = outcome.touched
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
            await plugin.finish()
            return
        }
        tally.update { summary in
            summary.upToDate += upToDate
            summary.failedRetryable += stillFailedRetryable
            summary.failedPermanently += stillFailedPermanently
        }

        // Touched files with the same bytes: refresh the stat so the next run does not hash them again.
        for file in touched {
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
        plans = []  // everything the uploads need is in `items` now

        if !items.isEmpty {
            let operations = self.operations
            let recorder = LedgerRecorder(ledger: ledger, destination: destination.name, retry: retry, clock: clock, tally: tally,
                                          items: items, attemptMarksMustBeDurable: !plugin.resendIsHarmless,
                                          makeDurable: { try plugin.makeDurable() }, observe: { event in operations.apply(event); observe(event) }, logger: logger)
            let layer = DeliveryLayer(
                destinationName: destination.name, destination: plugin, settings: destination.settings, clock: clock,
                random: random, onEvent: { event in await recorder.record(event) }
            )
            let grace = options.interruptGrace
            // Uploads run in a child task so that an interruption can cut them off after the grace period.
            let transfer = Task { await layer.uploadMany(items, cancellation: cancellation) { progress in recorder.progress(progress) } }
            let watchdog = Task {
                while !cancellation.isCancelled { try await Task.sleep(for: .milliseconds(50)) }
                try await Task.sleep(for: grace)
                transfer.cancel()
            }
            _ = await transfer.value
            watchdog.cancel()
            recorder.flush()
            if let error = recorder.firstError { throw error }
        }
        await plugin.finish()
    }
}

/// The run's counts, updated from many tasks.
final class SummaryTally: @unchecked Sendable {
    private let lock = NSLock()
    private var summary = SyncSummary()
    func update(_ body: (inout SyncSummary) -> Void) { lock.withLock { body(&summary) } }
    var value: SyncSummary { lock.withLock { summary } }
}
