import Foundation
import Logging

/// `check.interval` in `syncgate run`: each destination that has one is verified (``Verifier``) when its last
/// verification recorded in the ledger (by this gateway, or by `syncgate check`) is older than the interval, with
/// `check.repair` deciding whether missing and different copies are marked pending; a repair then asks the
/// destination's lane for a full pass, so they are sent again at once. A verification that fails (the destination
/// away) records nothing and is tried again after a few minutes.
struct ScheduledVerification: Sendable {
    let config: GatewayConfig
    let ledger: Ledger
    let clock: any SyncClock
    let logger: Logger
    let isStopped: @Sendable () -> Bool
    /// Called with a destination's name after a verification marked rows of it pending.
    let repaired: @Sendable (String) -> Void

    /// How long after a failed verification it is tried again.
    static let retryAfterFailure: Duration = .seconds(300)
    /// How often the schedule is looked at.
    static let tick: Duration = .seconds(30)

    func run() async {
        let scheduled = config.destinations.filter { $0.settings.check.interval != nil }
        guard !scheduled.isEmpty else { return }
        var failedAt: [String: ContinuousClock.Instant] = [:]
        while !isStopped() {
            let last = (try? await ledger.verifications()) ?? [:]
            for destination in scheduled where !isStopped() {
                guard let interval = destination.settings.check.interval else { continue }
                if let at = last[destination.name]?.verifiedAt, clock.now() < at.addingTimeInterval(interval.seconds) { continue }
                if let failed = failedAt[destination.name], ContinuousClock.now - failed < Self.retryAfterFailure { continue }
                let verifier = Verifier(name: destination.name, destination: destination.destination, ledger: ledger, clock: clock,
                                        repair: destination.settings.check.repair, limits: destination.limits)
                do {
                    let report = try await verifier.run()
                    failedAt[destination.name] = nil
                    if report.isClean {
                        logger.info("verified \(report.summary)")
                    } else {
                        logger.warning("verified \(report.summary)")
                    }
                    if report.record.repaired > 0 { repaired(destination.name) }
                } catch {
                    failedAt[destination.name] = ContinuousClock.now
                    logger.warning("\(destination.name): cannot verify: \(DeliveryLayer.describe(error))")
                }
            }
            var waited: Duration = .zero
            while waited < Self.tick && !isStopped() {
                try? await Task.sleep(for: .seconds(1))
                waited += .seconds(1)
            }
        }
    }
}
