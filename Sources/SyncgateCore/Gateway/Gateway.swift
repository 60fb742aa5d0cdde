import Foundation
import Logging
import Synchronization

/// A long-running gateway (`syncgate run`): one ``DestinationLane`` per destination, fed by the files its
/// watches see settle (``filesChanged(_:)``), full rescans (``rescanAll(reason:)``), failed files' retry times,
/// probes of destinations that are away, and changes other processes make to the ledger (`syncgate retry`,
/// `forget`). Its destinations stay open across passes. It never stops by itself: ``stop()`` drains it (no new
/// work; uploads in flight get the grace period) and ends every destination's session.
public final class Gateway: GatewayObservable, Sendable {
    public let config: GatewayConfig
    public let ledger: Ledger
    let engine: SyncEngine
    let logger: Logger
    private let lanes: [String: DestinationLane]
    private let hub = EventHub()
    private let deliveries: DeliveryLog
    private let state = Mutex(State())

    private struct State {
        var ready = false
        var stopped = false
        /// Reports of settling files the watches hold (added to the queue depth).
        var settling: @Sendable () -> Int = { 0 }
    }

    public init(config: GatewayConfig, ledger: Ledger, clock: any SyncClock = SystemClock(), logger: Logger = Logger(label: "syncgate.gateway")) {
        self.config = config
        self.ledger = ledger
        self.logger = logger
        let engine = SyncEngine(config: config, ledger: ledger, clock: clock, logger: logger)
        self.engine = engine
        let hub = self.hub
        let deliveries = DeliveryLog(logger: logger)
        self.deliveries = deliveries
        var lanes: [String: DestinationLane] = [:]
        for destination in config.destinations {
            lanes[destination.name] = DestinationLane(destination: destination, engine: engine, logger: logger) { event in
                hub.publish(event)
                deliveries.record(event)
            }
        }
        self.lanes = lanes
    }

    // MARK: - Running

    /// Runs until ``stop()``: rows a killed run left `uploading` are pending again, then every lane starts with a
    /// full pass (everything pending, failed and due, or new since the last run), then works as work comes.
    /// `watching` says the sources' watches are set (for ``isReady``), `settling` how many files they hold.
    public func run(settling: @escaping @Sendable () -> Int = { 0 }) async throws {
        let freed = try await ledger.resetInterruptedTakingOver(at: engine.clock.now()).freed
        try await ledger.noteRunStarted(at: engine.clock.now())
        // Files freed from an instance that is gone: planned by their paths, whatever this gateway's share of a walk.
        if !freed.isEmpty { filesChanged(freed) }
        state.withLock { $0.settling = settling }
        await withTaskGroup(of: Void.self) { group in
            for lane in lanes.values { group.addTask { await lane.run() } }
            group.addTask { await self.watchLedger() }
            group.addTask { await self.verifyOnSchedule() }
            await group.waitForAll()
        }
        deliveries.finish()
        for destination in config.destinations { await destination.finishIfBuilt() }
        ledger.leaveFleet()
        try? await ledger.noteRunFinished(at: engine.clock.now(), exitCode: ExitStatus.success)
        hub.close()
    }

    /// Says that the sources' watches are set: the gateway is ready (`/readyz`).
    public func watchesAreSet() {
        state.withLock { $0.ready = true }
    }

    /// Takes no new work, lets uploads in flight end (bounded by the engine's grace), and makes ``run()`` return.
    public func stop() {
        state.withLock { $0.stopped = true }
        for lane in lanes.values { lane.stop() }
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    /// Files that settled in the sources: each goes to the lanes of the destinations it is routed to.
    public func filesChanged(_ files: [FileKey]) {
        var byDestination: [String: [FileKey]] = [:]
        for file in files {
            for name in config.destinations(forSource: file.source, relativePath: file.path) { byDestination[name, default: []].append(file) }
        }
        for (name, files) in byDestination { lanes[name]?.add(files) }
    }

    /// A full pass of every destination (the watches lost track, or the periodic safety rescan).
    public func rescanAll(reason: String) {
        logger.info("full pass of every destination: \(reason)")
        for lane in lanes.values { lane.wantFullPass() }
    }

    /// Verifies the destinations that have a `check.interval` on that schedule (``ScheduledVerification``); a repair
    /// makes a full pass of the destination, so its copies are sent again at once.
    private func verifyOnSchedule() async {
        let lanes = self.lanes
        await ScheduledVerification(
            config: config, ledger: ledger, clock: engine.clock, logger: logger, isStopped: { [weak self] in self?.isStopped ?? true },
            repaired: { name in lanes[name]?.wantFullPass() }
        ).run()
    }

    /// Notices changes other processes commit to the ledger (`syncgate retry`, `syncgate forget`) within about a
    /// second, and acts on them with a full pass. On a shared ledger (PostgreSQL) it also looks, every third of a
    /// lease, for files held by an instance whose lease ended (it died): they are set back and taken in a full pass;
    /// and for changes of the fleet that leave a split walk undone (an instance joined, or one left or died before
    /// walking its share of the view this gateway walked by): a full pass walks this gateway's new share. It also
    /// asks for the lead of each destination that needs one writer and that it does not lead: when the leader's
    /// lock was released (it died, or its session ended), this gateway takes the lead and makes a full pass there
    /// within a third of a lease, not at its next rescan.
    private func watchLedger() async {
        var seen = (try? await ledger.changeCounter()) ?? 0
        // Time between checks is measured on the monotonic clock (the loop sleeps in real time).
        var lastClaimCheck = ContinuousClock.now
        while !isStopped {
            try? await Task.sleep(for: .seconds(1))
            if ledger.sharesWork, ContinuousClock.now - lastClaimCheck >= .seconds(ledger.leaseSeconds / 3) {
                lastClaimCheck = ContinuousClock.now
                if let claims = try? await ledger.othersClaims(), claims.expired > 0, !isStopped {
                    // The freed files are planned by their paths too: the rescan walks only this gateway's share.
                    if let freed = try? await ledger.resetInterruptedTakingOver(at: engine.clock.now()).freed, !freed.isEmpty { filesChanged(freed) }
                    rescanAll(reason: "\(claims.expired) file(s) held by an instance whose lease ended")
                } else if await fleetChangedUnderAWalk(), !isStopped {
                    rescanAll(reason: "the fleet changed: walking this instance's new share")
                }
                for destination in config.destinations where destination.destination.needsOneWriter && !isStopped {
                    guard !ledger.holdsLead(destination.name), await ledger.leads(destination.name, needsOneWriter: true) else { continue }
                    logger.info("\(destination.name): took the lead (the previous leader's lock was released); full pass")
                    lanes[destination.name]?.wantFullPass()
                }
            }
            guard let now = try? await ledger.changeCounter(), now != seen else { continue }
            seen = now
            if !isStopped { rescanAll(reason: "the ledger was changed by another syncgate (retry or forget)") }
        }
    }

    /// Whether the fleet changed under a walk this instance made of its share, for one of the destinations walked.
    private func fleetChangedUnderAWalk() async -> Bool {
        for (destination, view) in ledger.lastWalkedViews where (try? await ledger.fleetChanged(since: view, destinations: [destination])) == true {
            return true
        }
        return false
    }

    // MARK: - GatewayObservable

    public var isReady: Bool { state.withLock { $0.ready && !$0.stopped } }

    public func statusReport() async throws -> StatusReport {
        var report = try await StatusReport.build(config: config, ledger: ledger, destination: nil, failedOnly: false, now: engine.clock.now())
        report.syncRunning = true
        report.gatewayRunning = true
        report.heldBack = engine.holds.current
        var ongoing: [LedgerEntry] = []
        for operation in engine.operations.snapshot().ongoing {
            if let entry = try? await ledger.entry(operation.file, destination: operation.destination) { ongoing.append(entry) }
        }
        report.ongoing = ongoing
        return report
    }

    public var operations: OperationList { engine.operations }

    public func events() -> AsyncStream<DeliveryEvent> { hub.subscribe() }

    public func recorded() -> AsyncStream<Void> { ledger.commits() }

    public func retry(destination: String?, paths: [String]) async throws -> Int {
        let count = try await ledger.requestRetry(destination: destination, paths: paths, at: engine.clock.now())
        if paths.isEmpty { try await ledger.unblock(destination: destination, at: engine.clock.now()) }
        for (name, lane) in lanes where destination == nil || destination == name { lane.wantFullPass() }
        return count
    }

    public func forget(destination: String?, paths: [String]) async throws -> Int {
        try await ledger.forgetFailed(destination: destination, paths: paths)
    }

    public var figures: GatewayFigures {
        let progress = lanes.values.map(\.progress)
        let complete = progress.allSatisfy { $0.lastFullPass != nil } ? progress.compactMap(\.lastFullPass).min() : nil
        let settlingNow = state.withLock { $0.settling }
        return GatewayFigures(queueDepth: lanes.values.reduce(0) { $0 + $1.queueDepth } + settlingNow(),
                              lastCompletePass: complete, passes: progress.reduce(0) { $0 + $1.passes })
    }
}
