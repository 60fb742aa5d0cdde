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
        var destinations = config.destinations.filter { options.destinations.isEmpty || options.destinations.contains($0.name) }
        if !options.dryRun {
            // On a shared ledger, a destination that needs one writer is left to the instance that leads it.
            destinations = destinations.filter { destination in
                let leads = ledger.leads(destination.name, needsOneWriter: destination.destination.needsOneWriter)
                if !leads { logger.debug("\(destination.name): another instance leads this destination; left to it") }
                return leads
            }
        }

        if !options.dryRun && !options.isGatewayPass {
            try ledger.resetInterrupted(at: clock.now())
            try ledger.noteRunStarted(at: clock.now())
        }
        var removedFiles = try await pass(destinations, options: options, cancellation: cancellation, tally: tally, observe: observe, warn: warn)
        // A shared ledger (PostgreSQL): files that other instances held are theirs to send; those whose holder is
        // gone (its lease ended) are taken over here, in another pass, until no other instance holds any file of
        // these destinations (waiting up to a lease and a half for live claims to end or expire).
        if ledger.sharesWork && !options.dryRun && !options.isGatewayPass {
            let names = Set(destinations.map(\.name))
            var idleSince = Date()
            var extraPasses = 0
            while !cancellation.isCancelled, extraPasses < 100 {
                let claims = try ledger.othersClaims(destinations: names)
                if claims.expired > 0 {
                    logger.info("\(claims.expired) file(s) held by an instance whose lease ended: taking them over")
                    try ledger.resetInterrupted(at: clock.now())
                    removedFiles += try await pass(destinations, options: options, cancellation: cancellation, tally: tally, observe: observe, warn: warn)
                    extraPasses += 1
                    idleSince = Date()
                } else if claims.live > 0, Date().timeIntervalSince(idleSince) < ledger.leaseSeconds * 1.5 + 2 {
                    try await Task.sleep(for: .milliseconds(250))
                } else {
                    break
                }
            }
        }

        tally.update { $0.removedFromSources = removedFiles }
        if !options.dryRun && !cancellation.isCancelled && !config.sourcesDeletingAfterSync.isEmpty {
            let (moved, failures) = try AfterSyncMover(config: config, ledger: ledger, clock: clock, logger: logger).run(cancellation: cancellation)
            tally.update {
                $0.moved += moved
                $0.moveFailures += failures
            }
        }

        var summary = tally.value
        summary.interrupted = cancellation.isCancelled
        summary.away.sort { $0.name < $1.name }
        summary.seconds = Date().timeIntervalSince(started)
        if !options.dryRun && !options.isGatewayPass { try ledger.noteRunFinished(at: clock.now(), exitCode: summary.exitCode) }
        return summary
    }

    /// On a shared ledger, waves are this small: each wave's files are claimed when it is recorded, so smaller
    /// waves spread the files over the instances walking the same source.
    static let sharedWaveSize = 256

    /// One pass over the sources and destinations: plans, records, delivers. Returns how many files were found
    /// removed from their sources.
    private func pass(
        _ destinations: [DestinationConfig], options: SyncOptions, cancellation: CancellationHandle, tally: SummaryTally,
        observe: @escaping @Sendable (DeliveryEvent) -> Void, warn: @escaping @Sendable (ScanWarning) -> Void
    ) async throws -> Int {
        let records = options.dryRun ? [:] : try ledger.destinationRecords()

        // Each destination gets ready beside the planning: one probe of a destination that was away, the listing of
        // one whose listing is the truth (a head unit). Neither holds up the others.
        let runs = destinations.map { destination in
            DestinationRun(destination, namesCanClash: config.namesCanClash(at: destination), record: records[destination.name], ledger: ledger, clock: clock, logger: logger, random: random,
                           operations: operations, options: options, cancellation: cancellation, tally: tally, observe: observe)
        }
        if !options.dryRun {
            for run in runs where isRouted(run.destination.name) { run.startReadiness() }
        }

        // Scan and plan on a thread of its own, beside the ledger's rows (in the byte order of the paths);
        // nothing is kept of a file with nothing to do. Deliver what is planned, in waves where names cannot
        // clash, destinations in parallel.
        let now = clock.now()
        let planners = destinations.map { destination in
            DestinationPlanner(destination, config: config, options: options, remoteNames: nil,
                               verifiesListingLater: destination.destination.listingIsAuthoritative && !options.dryRun,
                               keepSkipped: false, now: now) { plan in
                if case .skip(let reason) = plan.action {
                    observe(DeliveryEvent(file: plan.file.key, destination: destination.name, size: plan.file.size, kind: .skipped(reason: reason), time: self.clock.now()))
                }
            }
        }
        let feed = WaveFeed(destinations: planners.count)
        let planning = PlanningPass(config: config, ledger: ledger, planners: planners, feed: feed, tally: tally, cancellation: cancellation, waveSize: ledger.sharesWork ? min(options.waveSize, SyncEngine.sharedWaveSize) : options.waveSize, paths: options.paths,
                                    detectsRemovals: !options.dryRun, now: now, warn: warn)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await planning.run() }
            for (index, run) in runs.enumerated() {
                group.addTask { try await run.deliver(feed, index: index) }
            }
            do {
                try await group.waitForAll()
            } catch {
                feed.stop()
                throw error
            }
        }

        return planning.removedFiles
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
}

/// The run's counts, updated from many tasks.
final class SummaryTally: @unchecked Sendable {
    private let lock = NSLock()
    private var summary = SyncSummary()
    func update(_ body: (inout SyncSummary) -> Void) { lock.withLock { body(&summary) } }
    var value: SyncSummary { lock.withLock { summary } }
}
