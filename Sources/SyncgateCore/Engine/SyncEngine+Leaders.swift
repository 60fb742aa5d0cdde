import Foundation

extension SyncEngine {
    /// A `sync` on a shared ledger leaves a destination that needs one writer to the instance that leads it
    /// (``Destination/needsOneWriter``). That leader may have just died: its lock is released only when the server
    /// notices its session ended, which can take seconds (a proxy in between, a loaded machine). Leaving the
    /// destination's files to a dead leader and exiting 0 would be a run that gives up silently. So, when the
    /// destination still has files to send at the end of the run, the run watches its lead, for at most a lease and a
    /// half:
    /// - the leader renews its lead (its `lead_until` moves on): it lives, the files are its, the run leaves them;
    /// - the lock is released: this run takes the lead and sends them (after the predecessor's lead has surely ended);
    /// - neither: the leader is frozen or cut off and its session lingers; the destination is reported unavailable
    ///   with its files waiting (exit 75), and a later run tries again.
    /// Returns the files the extra passes found removed from their sources.
    func takeLeadsOfSilentLeaders(
        _ left: [DestinationConfig], options: SyncOptions, cancellation: CancellationHandle, tally: SummaryTally,
        observe: @escaping @Sendable (DeliveryEvent) -> Void, warn: @escaping @Sendable (ScanWarning) -> Void
    ) async throws -> Int {
        let candidates = left.filter { $0.destination.needsOneWriter && (options.destinations.isEmpty || options.destinations.contains($0.name)) }
        guard !candidates.isEmpty, !cancellation.isCancelled else { return 0 }
        let counts = try await ledger.counts()
        func unsent(_ name: String) -> Int { counts[name].map { ($0[.pending] ?? 0) + ($0[.uploading] ?? 0) } ?? 0 }
        var watched: [(destination: DestinationConfig, leadUntil: Double?)] = []
        for destination in candidates where unsent(destination.name) > 0 {
            watched.append((destination, try await ledger.recordedLead(destination.name)?.until))
        }
        guard !watched.isEmpty else { return 0 }
        logger.info("\(watched.map(\.destination.name).joined(separator: ", ")): files wait for another instance's lead; watching that it lives")

        let limit = Duration.milliseconds(Int64(ledger.leaseSeconds * 1500)) + .seconds(2)
        let start = ContinuousClock.now
        var taken: [DestinationConfig] = []
        while !watched.isEmpty, !cancellation.isCancelled, ContinuousClock.now - start < limit {
            var still: [(destination: DestinationConfig, leadUntil: Double?)] = []
            for entry in watched {
                let name = entry.destination.name
                if await ledger.leads(name, needsOneWriter: true) {
                    logger.info("\(name): took the lead (the previous leader's lock was released); sending its files")
                    taken.append(entry.destination)
                } else if let now = try? await ledger.recordedLead(name)?.until, let first = entry.leadUntil, now > first {
                    logger.debug("\(name): its leader renewed its lead; its files are left to it")
                } else {
                    var first = entry.leadUntil
                    if first == nil { first = try? await ledger.recordedLead(name)?.until }
                    still.append((entry.destination, first))
                }
            }
            watched = still
            if !watched.isEmpty { try? await Task.sleep(for: .milliseconds(250)) }
        }

        var removed = 0
        if !taken.isEmpty, !cancellation.isCancelled {
            if let wait = taken.map({ ledger.leadReadyIn($0.name) }).max(), wait > .zero {
                logger.info("waiting \(wait.syncgateText) for the lead of the previous leader to end before sending")
                try? await Task.sleep(for: wait)
            }
            try await ledger.resetInterrupted(at: clock.now())
            let outcome = try await pass(taken, options: options, cancellation: cancellation, tally: tally, observe: observe, warn: warn)
            removed += outcome.removed
            removed += try await takeOverWhatOthersLeft(taken, after: outcome, options: options, cancellation: cancellation,
                                                        tally: tally, observe: observe, warn: warn)
        }
        if cancellation.isCancelled { return removed }
        let now = clock.now()
        for entry in watched {
            let waiting = unsent(entry.destination.name)
            let why = "another instance leads it and neither renewed nor released its lead within \(limit.syncgateText) (frozen, or cut off from PostgreSQL)"
            logger.warning("\(entry.destination.name): \(why); \(waiting) file(s) wait for it")
            tally.update {
                $0.away.append(SyncSummary.AwayDestination(name: entry.destination.name, state: .unavailable, since: now, error: why,
                                                           code: "leader-silent", waiting: waiting))
            }
        }
        return removed
    }
}
