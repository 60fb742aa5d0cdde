import Foundation

extension SyncEngine {
    /// Compares where each destination's copies go with what the ledger recorded (``Ledger/noteTarget(_:_:at:)``),
    /// before the planning reads the rows: a destination pointed elsewhere (another folder, bucket, prefix,
    /// spreadsheet) holds none of what its rows say, so the files recorded synced there are made pending and this
    /// pass sends them (or finds them there, where the destination can look). Destinations whose plugin does not say
    /// where its copies go are not compared.
    func noteTargets(_ destinations: [DestinationConfig]) async throws {
        for (name, target, _) in try await differingTargets(destinations) {
            switch try await ledger.noteTarget(name, target, at: clock.now()) {
            case .first, .same:
                break
            case .changed(let was, let marked):
                logger.warning("\(name): the destination now points at \(target.description) (it was \(was)); the \(marked) file(s) recorded synced there are sent again (or found there)")
            case .disagreement(let was, let by):
                if targetDisagreements.withLock({ $0.insert(name).inserted }) {
                    logger.error("\(name): instance \(by) has the destination at \(was), this instance's config at \(target.description); nothing is sent again while both run. Give every instance of the fleet the same config.")
                }
            }
        }
    }

    /// A dry run's ``noteTargets(_:)``: changes nothing, says which destinations a run would find pointed elsewhere
    /// (their synced files are then planned as that run would plan them: sent again).
    func targetsChanged(_ destinations: [DestinationConfig]) async throws -> Set<String> {
        var changed: Set<String> = []
        for (name, target, recorded) in try await differingTargets(destinations) where recorded != nil {
            changed.insert(name)
            logger.warning("\(name): the destination now points at \(target.description), not where its copies were recorded; a sync would send them again")
        }
        return changed
    }

    /// The destinations whose target differs from the recorded one (its digest), or has none recorded (nil).
    private func differingTargets(_ destinations: [DestinationConfig]) async throws -> [(String, DestinationTarget, String?)] {
        let targets = destinations.compactMap { destination in destination.target.map { (destination.name, $0) } }
        guard !targets.isEmpty else { return [] }
        let recorded = try await ledger.recordedTargetDigests()
        return targets.filter { recorded[$0.0] != $0.1.digest }.map { ($0.0, $0.1, recorded[$0.0]) }
    }
}
