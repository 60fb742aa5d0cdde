import Foundation

/// Decides, file by file as the scan finds them, what one destination needs, keeping only what it must act on.
///
/// Files arrive in the byte order of (source, path) together with the destination's ledger row for the file, if
/// any (the sync walks the scan and the ledger side by side). A file with nothing to do is counted, reported to
/// `skipped` and forgotten; uploads and failures are kept. Remote names are remembered as 64-bit hashes only, so
/// that what stays in memory for an up-to-date file is 8 bytes; a repeated hash (a real clash or, very rarely,
/// two names with one hash) is settled by ``finish(rescan:)``, which looks at the exact names again.
final class DestinationPlanner {
    let destination: DestinationConfig
    let engine: SyncEngine
    let options: SyncOptions
    let remoteNames: Set<ExactString>?
    /// Keep the plans of skipped files too (``SyncEngine/plan(_:files:options:remoteNames:)`` returns every plan).
    let keepSkipped: Bool
    let skipped: (PlannedDelivery) throws -> Void
    let now: Date

    private(set) var plans: [PlannedDelivery] = []
    /// Files seen (routed to this destination).
    private(set) var considered = 0
    /// Skipped files: up to date, and failed ones not due (retryable) or given up on (permanent).
    private(set) var upToDate = 0, stillFailedRetryable = 0, stillFailedPermanently = 0
    /// Files touched with the same bytes: their size and time are refreshed in the ledger.
    private(set) var touched: [ScannedFile] = []
    private var nameHashes: Set<Int> = []
    private var repeatedHashes: Set<Int> = []

    init(
        _ destination: DestinationConfig, engine: SyncEngine, options: SyncOptions, remoteNames: Set<ExactString>?,
        keepSkipped: Bool, now: Date, skipped: @escaping (PlannedDelivery) throws -> Void
    ) {
        self.destination = destination
        self.engine = engine
        self.options = options
        self.remoteNames = remoteNames
        self.keepSkipped = keepSkipped
        self.now = now
        self.skipped = skipped
    }

    /// Decides one file. `rows` is positioned on the file's row for this destination when `found`.
    func consider(_ file: ScannedFile, rows: LedgerRowStream, found: Bool) throws {
        considered += 1
        var plan = PlannedDelivery(
            file: file, destination: destination.name, action: .upload(reason: "new"), sha256: nil,
            isArtwork: engine.config.isArtwork(file.relativePath), entryRef: nil, remoteName: nil
        )
        do {
            let name = try destination.destination.remoteName(forRelativePath: file.relativePath)
            plan.remoteName = name
            let hash = ExactString(name).hashValue
            if !nameHashes.insert(hash).inserted { repeatedHashes.insert(hash) }
        } catch {
            plan.action = .fail(DeliveryFailure(message: DeliveryLayer.describe(error), failureClass: .permanent, code: (error as? DestinationError)?.code, attempts: 0))
            plans.append(plan)
            return
        }
        // The common case first: synced, same size and time, still at the destination. Decided from the row's
        // status, size and time alone.
        if found, rows.status == .synced, !options.onlyFailed,
           rows.size == file.size, abs(rows.modificationTime.timeIntervalSince(file.modificationTime)) < 0.000_001,
           remoteNames.map({ names in plan.remoteName.map { names.contains(ExactString($0)) } ?? true }) ?? true {
            plan.action = .skip(reason: "up to date", stillFailed: nil)
            if keepSkipped { plan.sha256 = rows.entry()?.sha256 }
            try skip(plan)
            return
        }
        let entry = found ? rows.entry() : nil
        guard engine.decide(&plan, entry: entry, options: options, remoteNames: remoteNames, now: now,
                            hashLater: destination.destination.hashesWhileSending) else { return }
        if case .skip = plan.action {
            // A file with nothing to do keeps no copy of its ledger row (only uploads read it later).
            try skip(plan)
            return
        }
        plan.entryRef = entry.map(LedgerEntryRef.init)
        plans.append(plan)
    }

    private func skip(_ plan: PlannedDelivery) throws {
        guard case .skip(let reason, let stillFailed) = plan.action else { return }
        switch stillFailed {
        case .none: upToDate += 1
        case .permanent?: stillFailedPermanently += 1
        default: stillFailedRetryable += 1
        }
        if reason == "up to date (touched)" { touched.append(plan.file) }
        if keepSkipped { plans.append(plan) }
        try skipped(plan)
    }

    /// What a destination's run needs of its plan (the planner itself stays with the scan).
    struct Outcome: Sendable {
        var destination: DestinationConfig
        var plans: [PlannedDelivery]
        var upToDate: Int, stillFailedRetryable: Int, stillFailedPermanently: Int
        var touched: [ScannedFile]
    }

    /// ``finish(rescan:)``, with the counts.
    func outcome(rescan: ((ScannedFile) throws -> Void) throws -> Void) rethrows -> Outcome {
        Outcome(destination: destination, plans: try finish(rescan: rescan), upToDate: upToDate,
                stillFailedRetryable: stillFailedRetryable, stillFailedPermanently: stillFailedPermanently, touched: touched)
    }

    /// The plans to act on, after failing every file that would be stored under the same remote name as another:
    /// nothing is overwritten. `rescan` walks the files again (only when a name hash repeated) for their names.
    func finish(rescan: ((ScannedFile) throws -> Void) throws -> Void) rethrows -> [PlannedDelivery] {
        guard !repeatedHashes.isEmpty else { return plans }
        var byName: [ExactString: [ScannedFile]] = [:]
        try rescan { file in
            guard let name = try? destination.destination.remoteName(forRelativePath: file.relativePath) else { return }
            let key = ExactString(name)
            if repeatedHashes.contains(key.hashValue) { byName[key, default: []].append(file) }
        }
        var failures: [FileKey: DeliveryFailure] = [:]
        for (name, files) in byName where files.count > 1 {
            let paths = files.map { "'\($0.relativePath)'" }.joined(separator: " and ")
            for file in files {
                failures[file.key] = DeliveryFailure(
                    message: "remote name clash: \(paths) would all be stored as '\(name.value)'; rename one of them",
                    failureClass: .permanent, code: "name-clash", attempts: 0)
            }
        }
        for index in plans.indices {
            guard let failure = failures[plans[index].file.key] else { continue }
            if case .skip = plans[index].action { continue }
            plans[index].action = .fail(failure)
        }
        return plans
    }
}
