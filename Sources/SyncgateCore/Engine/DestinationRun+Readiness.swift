import Foundation

/// Getting ready: what must be known before anything is sent.
extension DestinationRun {
    /// Starts, beside the planning, what must be known before anything is sent: whether a destination that was
    /// away answers again (one probe), and the listing of a destination whose listing is the truth. A blocked
    /// destination whose settings have not changed is not tried at all.
    func startReadiness() {
        readiness.withLock { $0 = Task { await self.getReady() } }
    }

    private func getReady() async -> Readiness {
        let plugin = destination.destination
        let name = destination.name
        plugin.useResumeStore(ResumeStore(ledger: ledger, destination: name, clock: clock))
        if options.isGatewayPass { await plugin.startPass() }
        if plugin.needsOneWriter, let epoch = ledger.leadEpoch(name) { await plugin.writesUnderLead(epoch: epoch) }
        if let record, record.state == .blocked, record.fingerprint == destination.fingerprint {
            awayAsRecorded.set()
            breaker.trip(DeliveryFailure(
                message: record.lastError ?? "blocked", failureClass: .permanent, scope: .destination, code: record.errorCode, attempts: 0))
            return Readiness()
        }
        if let record, record.state != .available, let until = record.retryAfterUntil, until > clock.now() {
            // It asked to be left alone until then (Retry-After): no run tries it before, a one-shot sync included.
            awayAsRecorded.set()
            breaker.trip(DeliveryFailure(
                message: "asked to be left alone until \(ReportJSON.time(until)) (Retry-After); the last error: \(record.lastError ?? "unavailable")",
                failureClass: .retryable(), scope: .destination, code: record.errorCode, attempts: 0))
            return Readiness()
        }
        if let record, record.state != .available, options.isGatewayPass, let next = record.nextProbeAt, next > clock.now() {
            // A gateway probes on its own schedule (2 s doubling up to probe_interval_max), not at every pass.
            awayAsRecorded.set()
            breaker.trip(DeliveryFailure(
                message: record.lastError ?? "unavailable", failureClass: .retryable(), scope: .destination, code: record.errorCode, attempts: 0))
            return Readiness()
        }
        let limits = destination.limits
        if let record, record.state != .available {
            switch await probe() {
            case .done(let answered, _):
                contact.set()
                if answered {
                    logger.info("\(name): the destination answers again (it was \(record.state.rawValue) since \(ReportJSON.time(record.since)))")
                }
            case .waiting, .failed, .cancelled:
                return Readiness()  // away: the loop opened the breaker with why
            }
        }
        guard plugin.listingIsAuthoritative else { return Readiness() }
        do {
            try? await limits.beforeRequest(clock: clock, cancellation: cancellation)
            let listing = try await AttemptWatchdog().run(timeout: destination.settings.attemptTimeout) { try await plugin.list() }
            contact.set()
            guard listing.isComplete else {
                logger.info("\(name): the destination lists only part of what it holds (\(listing.entries.count) names); trusting the ledger")
                return Readiness()
            }
            return Readiness(listing: listing.exactNames)
        } catch {
            if let failure = awayFailure(error) {
                breaker.trip(failure)
            } else {
                logger.warning("\(name): cannot list the destination (\(Redactor.shared.redact(DeliveryLayer.describe(error)))); trusting the ledger")
            }
            return Readiness()
        }
    }

    /// Probes the destination once, through the delivery layer's retry loop (its `rate`, the breaker, cancellation):
    /// done when it answered (false: if only to refuse something, it is there); waiting, with the breaker open,
    /// when it is away.
    private func probe() async -> RetryOutcome<Bool> {
        let plugin = destination.destination
        let timeout = destination.settings.attemptTimeout
        let layer = DeliveryLayer(destinationName: destination.name, destination: plugin, settings: destination.settings,
                                  clock: clock, breaker: breaker, limits: destination.limits)
        return await layer.withRetries(subject: "probe", policy: layer.policy(retries: 0), pacing: .request, cancellation: cancellation) { _ in
            do {
                try await AttemptWatchdog().run(timeout: timeout) { try await plugin.probe() }
                return true
            } catch {
                if let away = awayFailure(error) { throw away }
                return false
            }
        }
    }

    /// The failure to open the breaker with, when `error` says the destination is away (destination-scoped and
    /// not a throttle); nil otherwise.
    private func awayFailure(_ error: any Error) -> DeliveryFailure? {
        let classification = error is AttemptTimeoutError ? Classification(.retryable(), scope: .destination)
            : destination.destination.classify(error)
        guard classification.scope == .destination, !classification.failureClass.isDeferred || error is AttemptTimeoutError else { return nil }
        return DeliveryFailure(message: Redactor.shared.redact(DeliveryLayer.describe(error)), failureClass: classification.failureClass,
                               scope: .destination, code: (error as? DestinationError)?.code, attempts: 0)
    }
}
