import Foundation
import Logging
import Synchronization

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
    /// The sources held back from deletions, as this engine's passes judged them (a gateway's, across its passes).
    public let holds = SourceHolds()
    /// Destinations whose target another live instance records otherwise (``noteTargets(_:)``), said once.
    let targetDisagreements = Mutex<Set<String>>([])

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
    /// A state file found deleted or replaced cancels `cancellation` at once (``Ledger/stoppingOnLoss(_:_:)``).
    public func run(
        _ options: SyncOptions = SyncOptions(), cancellation: CancellationHandle = CancellationHandle(),
        observe: @escaping @Sendable (DeliveryEvent) -> Void = { _ in },
        warn: @escaping @Sendable (ScanWarning) -> Void = { _ in }
    ) async throws -> SyncSummary {
        try await ledger.stoppingOnLoss(cancellation) {
            try await runStoppingOnLoss(options, cancellation: cancellation, observe: observe, warn: warn)
        }
    }

    /// One run, step by step: the destinations this instance may send to, the run noted started, one pass, the
    /// files other instances left taken over (a fleet), the sources' files moved away once delivered, the summary.
    private func runStoppingOnLoss(
        _ options: SyncOptions, cancellation: CancellationHandle,
        observe: @escaping @Sendable (DeliveryEvent) -> Void, warn: @escaping @Sendable (ScanWarning) -> Void
    ) async throws -> SyncSummary {
        let started = ContinuousClock.now  // for the run's duration, measured on the monotonic clock
        let tally = SummaryTally()
        let (destinations, leftToLeaders) = await destinationsLedHere(options)
        let recorded = !options.dryRun && !options.isGatewayPass
        var freed: [FileKey] = []
        if recorded {
            freed = try await ledger.resetInterruptedTakingOver(at: clock.now()).freed
            try await ledger.noteRunStarted(at: clock.now())
        }
        let first = try await pass(destinations, options: options, cancellation: cancellation, tally: tally, observe: observe, warn: warn)
        var removedFiles = first.removed
        if ledger.sharesWork && recorded {
            removedFiles += try await passOver(freed, destinations, options: options, cancellation: cancellation, tally: tally, observe: observe, warn: warn)
            removedFiles += try await takeOverWhatOthersLeft(destinations, after: first, options: options, cancellation: cancellation,
                                                             tally: tally, observe: observe, warn: warn)
            removedFiles += try await takeLeadsOfSilentLeaders(leftToLeaders, options: options, cancellation: cancellation,
                                                               tally: tally, observe: observe, warn: warn)
        }
        tally.update { $0.removedFromSources = removedFiles }
        if !options.dryRun && !cancellation.isCancelled && !config.sourcesDeletingAfterSync.isEmpty {
            try await moveDeliveredFiles(cancellation: cancellation, tally: tally)
        }

        var summary = tally.value
        summary.interrupted = cancellation.isCancelled
        summary.away.sort { $0.name < $1.name }
        summary.seconds = (ContinuousClock.now - started).seconds
        if recorded { try await ledger.noteRunFinished(at: clock.now(), exitCode: summary.exitCode) }
        return summary
    }

    /// The destinations of this run that this instance may send to: on a shared ledger, a destination that needs one
    /// writer is left to the instance that leads it, and a new leader first waits until its predecessor's lead has
    /// surely ended (a predecessor that is cut off or frozen stops before then, see ``LeaseFence``).
    /// Also returns the destinations left to another instance's lead.
    private func destinationsLedHere(_ options: SyncOptions) async -> (led: [DestinationConfig], left: [DestinationConfig]) {
        var destinations = config.destinations.filter { options.destinations.isEmpty || options.destinations.contains($0.name) }
        guard !options.dryRun else { return (destinations, []) }
        var led: [DestinationConfig] = []
        var left: [DestinationConfig] = []
        for destination in destinations {
            if await ledger.leads(destination.name, needsOneWriter: destination.destination.needsOneWriter) {
                led.append(destination)
            } else {
                left.append(destination)
                logger.debug("\(destination.name): another instance leads this destination; left to it")
            }
        }
        destinations = led
        if let wait = destinations.map({ ledger.leadReadyIn($0.name) }).max(), wait > .zero {
            logger.info("waiting \(wait.syncgateText) for the lead of the previous leader to end before sending")
            try? await Task.sleep(for: wait)
        }
        return (destinations, left)
    }

    /// A shared ledger (PostgreSQL): files that other instances held are theirs to send; those whose holder is gone
    /// (its lease ended) are taken over here, in another pass, until no other instance holds any file of these
    /// destinations (waiting up to a lease and a half for live claims to end or expire). A walk split between the
    /// instances is walked again when the fleet changed under it (an instance joined, or one left or died before
    /// walking its share), and the run waits, as long, for the others to walk their shares. Returns the files the
    /// extra passes found removed from their sources.
    func takeOverWhatOthersLeft(
        _ destinations: [DestinationConfig], after first: PassOutcome, options: SyncOptions, cancellation: CancellationHandle,
        tally: SummaryTally, observe: @escaping @Sendable (DeliveryEvent) -> Void, warn: @escaping @Sendable (ScanWarning) -> Void
    ) async throws -> Int {
        defer { ledger.leaveFleet() }
        let names = Set(destinations.map(\.name))
        var outcome = first
        var removedFiles = 0
        var idleSince = ContinuousClock.now  // the wait below sleeps in real time, and is measured so
        var extraPasses = 0
        while !cancellation.isCancelled, extraPasses < 100 {
            let again: String?
            let claims = try await ledger.othersClaims(destinations: names)
            var fleetChanged = outcome.walkAgain
            if !fleetChanged, let split = outcome.split {
                fleetChanged = try await ledger.fleetChanged(since: split.view, destinations: split.destinations)
            }
            if fleetChanged {
                again = "the fleet changed while its shares were walked: walking again"
            } else if claims.expired > 0 {
                again = "\(claims.expired) file(s) held by an instance whose lease ended: taking them over"
            } else {
                again = nil
            }
            if let again {
                logger.info("\(again)")
                // The rows of a gone instance are planned by whoever frees them, by their paths: a walk split between
                // the instances covers only this one's share, and the instances whose share holds the rest may find
                // them freed already (no claim left to expire) and not walk again.
                let freed = try await ledger.resetInterruptedTakingOver(at: clock.now()).freed
                removedFiles += try await passOver(freed, destinations, options: options, cancellation: cancellation, tally: tally, observe: observe, warn: warn)
                outcome = try await pass(destinations, options: options, cancellation: cancellation, tally: tally, observe: observe, warn: warn)
                removedFiles += outcome.removed
                extraPasses += 1
                idleSince = ContinuousClock.now
                continue
            }
            var othersWalking = false
            if let split = outcome.split { othersWalking = try await !ledger.fleetWalked(split.view, destinations: split.destinations) }
            guard claims.live > 0 || othersWalking, ContinuousClock.now - idleSince < .seconds(ledger.leaseSeconds * 1.5 + 2) else { break }
            // Looked at ten times a second: the fleet's run ends when its last instance exits, and the others
            // see the last claims go only when it has recorded them.
            try await Task.sleep(for: .milliseconds(100))
        }
        return removedFiles
    }

    /// A pass over `files` alone, by their paths and whoever's share of the fleet's walk they are in: the files an
    /// instance freed from instances that are gone (``Ledger/resetInterruptedTakingOver(at:)``). Returns the files it
    /// found removed. Nothing to do for none, or for a run of chosen files (its own pass took them).
    private func passOver(
        _ files: [FileKey], _ destinations: [DestinationConfig], options: SyncOptions, cancellation: CancellationHandle,
        tally: SummaryTally, observe: @escaping @Sendable (DeliveryEvent) -> Void, warn: @escaping @Sendable (ScanWarning) -> Void
    ) async throws -> Int {
        guard !files.isEmpty, options.paths == nil, !cancellation.isCancelled else { return 0 }
        logger.info("\(files.count) file(s) freed from an instance whose lease ended: planning them whatever the shares")
        var chosen = options
        chosen.paths = files
        return try await pass(destinations, options: chosen, cancellation: cancellation, tally: tally, observe: observe, warn: warn).removed
    }

    /// Deletes from their sources the files whose settings say so once delivered (a move; ``AfterSyncMover``).
    private func moveDeliveredFiles(cancellation: CancellationHandle, tally: SummaryTally) async throws {
        let mover = AfterSyncMover(config: config, ledger: ledger, clock: clock, logger: logger)
        let (moved, failures) = try await ledger.offThread { try mover.run(cancellation: cancellation) }
        tally.update {
            $0.moved += moved
            $0.moveFailures += failures
        }
    }

    /// On a shared ledger, waves are this small: each wave's files are claimed when it is recorded, so smaller
    /// waves spread the files over the instances walking the same source.
    static let sharedWaveSize = 256

    /// What one pass did: how many files it found removed from their sources and, when its walk was split between a
    /// fleet's instances and went to its end, the view it was split by and the destinations it walked for.
    struct PassOutcome {
        var removed: Int
        var split: (view: FleetView, destinations: Set<String>)?
        /// The walk was split and the fleet changed on its way: it covered no single view.
        var walkAgain = false
    }

    /// One pass over the sources and destinations: plans, records, delivers.
    func pass(
        _ destinations: [DestinationConfig], options: SyncOptions, cancellation: CancellationHandle, tally: SummaryTally,
        observe: @escaping @Sendable (DeliveryEvent) -> Void, warn: @escaping @Sendable (ScanWarning) -> Void
    ) async throws -> PassOutcome {
        var pointedElsewhere: Set<String> = []
        if options.dryRun { pointedElsewhere = try await targetsChanged(destinations) } else { try await noteTargets(destinations) }
        let records = options.dryRun ? [:] : try await ledger.destinationRecords()

        // Each destination gets ready beside the planning: one probe of a destination that was away, the listing of
        // one whose listing is the truth (a head unit). Neither holds up the others.
        let runs = destinations.map { destination in
            DestinationRun(destination, namesCanClash: config.namesCanClash(at: destination), record: records[destination.name], ledger: ledger, clock: clock, logger: logger, random: random,
                           operations: operations, holds: holds, options: options, cancellation: cancellation, tally: tally, observe: observe)
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
                               pointedElsewhere: pointedElsewhere.contains(destination.name), keepSkipped: false, now: now) { plan in
                if case .skip(let reason) = plan.action {
                    observe(DeliveryEvent(file: plan.file.key, destination: destination.name, size: plan.file.size, kind: .skipped(reason: reason), time: self.clock.now()))
                }
            }
        }
        let split = try await fleetSplit(planners, options: options)
        let feed = WaveFeed(destinations: planners.count, share: split?.share, splitSources: split?.sources ?? [])
        let planning = PlanningPass(config: config, ledger: ledger, planners: planners, feed: feed, tally: tally, cancellation: cancellation, waveSize: ledger.sharesWork ? min(options.waveSize, SyncEngine.sharedWaveSize) : options.waveSize, paths: options.paths,
                                    share: split?.share, splitSources: split?.sources ?? [], detectsRemovals: !options.dryRun,
                                    acceptsSourceChanges: options.acceptSourceChanges, holds: holds, now: now, warn: warn)
        // While the walk runs, the fleet is looked at every 25 ms for its first half second, ten times a second up to
        // 3 s, then twice a second: an instance that joins takes its share of the files not planned yet at once. Instances started together
        // join within moments of one another, and whatever the first plans before it sees the others is taken from
        // their shares, so the first looks are the ones that even the split.
        let fleetLedger = ledger
        let refresher = split.map { split in
            Task.detached {
                var looked = Duration.zero
                while !Task.isCancelled {
                    let pause: Duration = looked < .milliseconds(500) ? .milliseconds(25) : looked < .seconds(3) ? .milliseconds(100) : .milliseconds(500)
                    try? await Task.sleep(for: pause)
                    looked += pause
                    if !Task.isCancelled, let view = try? await fleetLedger.liveFleetView() { split.share.update(view) }
                }
            }
        }
        defer { refresher?.cancel() }
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

        refresher?.cancel()
        if options.isGatewayPass {
            // A gateway prints no summary: a source held back is logged when that changes, not every pass.
            for hold in planning.holdChanges.held {
                logger.error("source \(hold.source) held back: \(hold.reason); \(hold.gone) of its files are gone, and nothing of it is deleted at any destination. If the source is as it should be, run `syncgate sync --accept-source-changes` once.")
            }
            // Once per hold, at error level; a reason that changes while the source stays held back, once more, lower.
            for hold in planning.holdChanges.reasonChanged {
                logger.warning("source \(hold.source) still held back, now because \(hold.reason); \(hold.gone) of its files are gone")
            }
            for source in planning.holdChanges.released { logger.info("source \(source) is no longer held back") }
        }
        var outcome = PassOutcome(removed: planning.removedFiles)
        if let split, planning.walkedAll, !cancellation.isCancelled {
            if split.share.changed {
                outcome.walkAgain = true
                tally.update { $0.fleetChangedDuringWalk = true }
            } else {
                try await ledger.noteWalked(split.share.start, destinations: split.destinations)
                outcome.split = (split.share.start, split.destinations)
            }
        }
        return outcome
    }

    /// On a shared ledger, how a full walk is split between the fleet's instances (``FleetView``): the sources
    /// whose every destination planned here can take its files from any instance are walked for this instance's
    /// share only. A source feeding a destination planned whole (its names can clash) or needing one writer (its
    /// leader plans it alone) is walked whole. Nil when nothing is split: SQLite, a dry run, a run of chosen files
    /// or of chosen destinations (`sync --destination`: the others' shares of the rest would go unwalked).
    private func fleetSplit(_ planners: [DestinationPlanner], options: SyncOptions) async throws -> (share: FleetShare, sources: Set<String>, destinations: Set<String>)? {
        guard ledger.sharesWork, !options.dryRun, options.paths == nil, options.isGatewayPass || options.destinations.isEmpty,
              let view = try await ledger.fleetView() else { return nil }
        let planned = Set(planners.map(\.destination.name))
        let splittable = Set(planners.filter { $0.deliversInWaves && !$0.destination.destination.needsOneWriter }.map(\.destination.name))
        var sources = Set<String>()
        for source in config.sources {
            let routed = planned.filter { config.sources(routedTo: $0).contains(source.name) }
            if !routed.isEmpty, routed.isSubset(of: splittable) { sources.insert(source.name) }
        }
        let destinations = splittable.filter { destination in !config.sources(routedTo: destination).isDisjoint(with: sources) }
        guard !sources.isEmpty else { return nil }
        logger.debug("fleet: walking the share of \(view) of \(sources.sorted().joined(separator: ", "))")
        return (FleetShare(view), sources, destinations)
    }

    /// Plans one destination's files without changing anything (hashes only files whose size or time changed).
    /// Every file gets a plan, in the byte order of (source, path). Reads the ledger on the calling thread, which
    /// it blocks (a tool's or a test's, not a task of a run).
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
final class SummaryTally: Sendable {
    private let summary = Mutex(SyncSummary())
    func update(_ body: (inout SyncSummary) -> Void) { summary.withLock { body(&$0) } }
    var value: SyncSummary { summary.withLock { $0 } }
}
