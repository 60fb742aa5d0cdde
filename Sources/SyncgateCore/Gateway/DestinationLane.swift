import Foundation
import Logging
import Synchronization

/// One destination's work inside a gateway: passes of the engine for that destination alone, one at a time, as
/// work comes: files that settled (a pass over just those files), a full pass (at start, on a rescan, when a retry
/// falls due, when the destination's probe is due, when someone asked for a retry). A destination that is away
/// or slow holds up only its own lane.
final class DestinationLane: Sendable {
    let destination: DestinationConfig
    let engine: SyncEngine
    let logger: Logger
    let observe: @Sendable (DeliveryEvent) -> Void
    /// Whether two of its files can end up under one name (a head unit flattens folders; several sources into one
    /// place): such a destination is always planned whole, so a pass over a few files would not see a clash.
    let namesCanClash: Bool

    private let state = Mutex(State())
    private let wakeup = Wakeup()

    private struct State {
        var paths: Set<FileKey> = []
        /// Files a pass found younger than their source's `min_age`, with the time they are old enough: looked at
        /// again then (not at the next rescan).
        var tooNew: [FileKey: Date] = [:]
        var fullPassWanted = true  // the first pass sends everything pending, failed and due, or new
        var stopping = false
        var lastFullPassEnd: Date?
        /// When the last full pass started: whatever fell due before it was that pass's to act on.
        var lastFullPassStart: Date?
        var passCount = 0
        /// Cancels the pass in flight when the gateway stops (uploads in flight get the grace period).
        var passCancellation = CancellationHandle()
    }

    init(destination: DestinationConfig, engine: SyncEngine, logger: Logger, observe: @escaping @Sendable (DeliveryEvent) -> Void) {
        self.destination = destination
        self.engine = engine
        self.logger = logger
        self.observe = observe
        let sources = engine.config.sources(routedTo: destination.name)
        namesCanClash = !(destination.destination.remoteNamesAreDistinct && sources.count <= 1)
    }

    /// Files of this destination that settled: a pass over them comes next.
    func add(_ files: [FileKey]) {
        guard !files.isEmpty else { return }
        state.withLock { state in
            if namesCanClash { state.fullPassWanted = true } else { state.paths.formUnion(files) }
        }
        wakeup.signal()
    }

    /// A full pass comes next (a rescan, a retry asked for, a change made by another process).
    func wantFullPass() {
        state.withLock { $0.fullPassWanted = true }
        wakeup.signal()
    }

    /// Files seen and not planned yet.
    var queueDepth: Int { state.withLock { $0.paths.count } }

    /// When its last full pass ended, and how many passes it ran.
    var progress: (lastFullPass: Date?, passes: Int) { state.withLock { ($0.lastFullPassEnd, $0.passCount) } }

    /// Takes no new work and cuts the pass in flight short (its uploads get the engine's grace period).
    func stop() {
        let handle: CancellationHandle = state.withLock { state in
            state.stopping = true
            return state.passCancellation
        }
        handle.cancel()
        wakeup.signal()
    }

    /// Runs passes until ``stop()``.
    func run() async {
        while true {
            takeFilesOldEnough()
            let (work, handle): (Work?, CancellationHandle) = state.withLock { state in
                if state.stopping { return (nil, state.passCancellation) }
                state.passCancellation = CancellationHandle()
                defer {
                    state.paths.removeAll()
                    state.fullPassWanted = false
                }
                if state.fullPassWanted { return (.full, state.passCancellation) }
                if !state.paths.isEmpty { return (.files(Array(state.paths)), state.passCancellation) }
                return (.idle, state.passCancellation)
            }
            guard let work else { return }
            if case .idle = work {
                await wakeup.wait(until: await nextTimer())
                if state.withLock({ $0.stopping }) { return }
                if await timerIsDue() { wantFullPassQuietly() }
                continue
            }
            await pass(work, cancellation: handle)
        }
    }

    private enum Work {
        case idle
        case full
        case files([FileKey])
    }

    private func pass(_ work: Work, cancellation: CancellationHandle) async {
        var options = SyncOptions(destinations: [destination.name])
        options.isGatewayPass = true
        if case .files(let files) = work {
            options.paths = files
        } else {
            let start = engine.clock.now()
            state.withLock { $0.lastFullPassStart = start }
        }
        do {
            let summary = try await engine.run(options, cancellation: cancellation, observe: observe)
            let now = engine.clock.now()
            state.withLock { state in
                state.tooNew.merge(summary.tooNewReadyAt) { max($0, $1) }
                state.passCount += 1
                if case .full = work, !summary.interrupted { state.lastFullPassEnd = now }
                if summary.fleetChangedDuringWalk { state.fullPassWanted = true }
            }
        } catch {
            // The ledger could not be written (disk full, the state file lost): say so and try again later; a
            // gateway does not die of it, but it does not spin on it either.
            logger.error("\(destination.name): pass failed: \(Redactor.shared.redact(String(describing: error)))")
            state.withLock { $0.fullPassWanted = true }
            await wakeup.wait(until: .now + .seconds(30))
            // What the failed pass held and could not let go of then (the ledger out of reach) is let go of now: the
            // next pass plans this instance's share, which may no longer hold those rows (``DestinationRun``).
            if engine.ledger.sharesWork { try? await engine.ledger.releaseClaims(destination: destination.name) }
        }
    }

    /// The next time something falls due without a file event: a failed file's retry, or a probe of the
    /// destination while it is away (for both, a full pass), or, with `tooNew`, a file that was too new being old
    /// enough (a pass over it).
    private func nextTimer(tooNew includeTooNew: Bool = true) async -> ContinuousClock.Instant? {
        let ledger = engine.ledger
        var due: [Date] = []
        if let retry = try? await ledger.nextRetryDue(destination: destination.name) { due.append(retry) }
        if let record = try? await ledger.destinationRecords()[destination.name], record.state == .unavailable, let probe = record.nextProbeAt {
            due.append(probe)
        }
        // A time that fell due before the last full pass started was that pass's to act on (a failed file no longer
        // in its source keeps a retry time in the past): waking for it again would spin.
        let (considered, oldEnough) = state.withLock { ($0.lastFullPassStart, $0.tooNew.values.min()) }
        due = due.filter { considered == nil || $0 > considered! }
        // A file too new is taken out of `tooNew` when it is old enough (``takeFilesOldEnough()``): no spin.
        if includeTooNew, let oldEnough { due.append(oldEnough) }
        guard let earliest = due.min() else { return nil }
        return .now + .milliseconds(max(0, Int64(earliest.timeIntervalSince(engine.clock.now()) * 1000)) + 10)
    }

    private func timerIsDue() async -> Bool {
        guard let next = await nextTimer(tooNew: false) else { return false }
        return next <= .now + .milliseconds(20)
    }

    /// The files that were too new and are old enough now: a pass over them comes next (a full pass where names can
    /// clash).
    private func takeFilesOldEnough() {
        let now = engine.clock.now()
        state.withLock { state in
            let ready = state.tooNew.filter { $0.value <= now }.map(\.key)
            guard !ready.isEmpty else { return }
            for key in ready { state.tooNew[key] = nil }
            if namesCanClash { state.fullPassWanted = true } else { state.paths.formUnion(ready) }
        }
    }

    private func wantFullPassQuietly() {
        state.withLock { $0.fullPassWanted = true }
    }
}
