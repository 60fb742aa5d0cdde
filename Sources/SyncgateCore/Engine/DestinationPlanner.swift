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
    let config: GatewayConfig
    let options: SyncOptions
    let remoteNames: Set<ExactString>?
    /// Whether the destination's listing is read beside the planning (``Destination/listingIsAuthoritative``):
    /// files the ledger says are delivered are then kept as ``unverified`` until the listing confirms them.
    let verifiesListingLater: Bool
    /// Keep the plans of skipped files too (``SyncEngine/plan(_:files:options:remoteNames:)`` returns every plan).
    let keepSkipped: Bool
    let skipped: (PlannedDelivery) throws -> Void
    let now: Date

    private(set) var plans: [PlannedDelivery] = []
    /// Skipped files: up to date, and failed ones not due (retryable) or given up on (permanent).
    private(set) var upToDate = 0, stillFailedRetryable = 0, stillFailedPermanently = 0
    /// Files touched with the same bytes: their size and time are refreshed in the ledger.
    private(set) var touched: [ScannedFile] = []
    /// Files younger than their source's `min_age`, with the time they are old enough.
    private(set) var tooNew: [FileKey: Date] = [:]
    /// `min_age` of the sources that have one.
    private let minAges: [String: Duration]
    /// Files the ledger says are delivered, kept until the destination's listing confirms it (only with
    /// ``verifiesListingLater``): the destination's run sends those the listing lacks, and reports the others.
    private(set) var unverified: [PlannedDelivery] = []
    private var nameHashes: Set<Int> = []
    private var repeatedHashes: Set<Int> = []
    /// Whether names can clash at all: not when the destination keeps paths apart and one source feeds it.
    private let tracksNames: Bool
    /// Whether the destination's order needs each kept plan's route priority.
    private let usesPriority: Bool
    /// A dry run's: the destination points elsewhere than its rows were recorded at (``SyncEngine/noteTargets(_:)``),
    /// so a synced file is planned as the run after it would plan it, sent again.
    let pointedElsewhere: Bool

    /// Whether the plans can be handed over in waves while the scan goes on (``takeWave()``): only when no name
    /// can clash. Where one can, every name must be seen before anything is sent, so nothing is overwritten.
    var deliversInWaves: Bool { !tracksNames }

    /// Plans kept so far (since the last wave).
    var keptCount: Int { plans.count + unverified.count }

    init(
        _ destination: DestinationConfig, config: GatewayConfig, options: SyncOptions, remoteNames: Set<ExactString>?,
        verifiesListingLater: Bool = false, pointedElsewhere: Bool = false, keepSkipped: Bool, now: Date,
        skipped: @escaping (PlannedDelivery) throws -> Void
    ) {
        self.pointedElsewhere = pointedElsewhere
        self.destination = destination
        self.config = config
        self.options = options
        self.remoteNames = remoteNames
        self.verifiesListingLater = verifiesListingLater && remoteNames == nil
        self.keepSkipped = keepSkipped
        self.now = now
        self.skipped = skipped
        self.tracksNames = config.namesCanClash(at: destination)
        self.usesPriority = destination.order.usesPriority
        self.minAges = Dictionary(config.sources.filter { $0.minAge > .zero }.map { ($0.name, $0.minAge) }) { a, _ in a }
    }

    /// Decides one file. `rows` is positioned on the file's row for this destination when `found`.
    func consider(_ file: ScannedFile, rows: LedgerRowStream, found: Bool) throws {
        // Whether it is artwork is looked up only for a plan that is kept (most files are up to date).
        var plan = PlannedDelivery(
            file: file, destination: destination.name, action: .upload(.new), sha256: nil,
            isArtwork: false, entryRef: nil, remoteName: nil
        )
        let name: String
        do {
            name = try destination.destination.remoteName(forRelativePath: file.relativePath)
            plan.remoteName = name
            if tracksNames {
                let hash = ExactString(name).hashValue
                if !nameHashes.insert(hash).inserted { repeatedHashes.insert(hash) }
            }
        } catch {
            plan.action = .fail(DeliveryFailure(message: DeliveryLayer.describe(error), failureClass: .permanent, code: (error as? DestinationError)?.code, attempts: 0))
            keep(plan)
            return
        }
        // The common case first: synced, same size and time, still at the destination. Decided from the row's
        // status, size and time alone.
        if found, rows.status == .synced, !options.onlyFailed, !pointedElsewhere,
           rows.size == file.size, FileStat.sameModificationTime(rows.modificationTime, file.modificationTime),
           remoteNames.map({ $0.contains(ExactString(name)) }) ?? true {
            plan.action = .skip(.upToDate)
            if keepSkipped { plan.sha256 = rows.entry()?.sha256 }
            try skip(plan)
            return
        }
        let entry = found ? rows.entry() : nil
        guard decide(&plan, entry: entry) else { return }
        if case .skip = plan.action {
            // A file with nothing to do keeps no copy of its ledger row (only uploads read it later).
            try skip(plan)
            return
        }
        plan.entryRef = entry.map(LedgerEntryRef.init)
        keep(plan)
    }

    private func keep(_ plan: PlannedDelivery) {
        plans.append(dressed(plan))
    }

    /// A plan kept for the run, with what its upload and its place in the destination's order need.
    private func dressed(_ plan: PlannedDelivery) -> PlannedDelivery {
        var plan = plan
        plan.isArtwork = config.isArtwork(plan.file.relativePath)
        if usesPriority {
            plan.priority = config.priority(source: plan.file.source, relativePath: plan.file.relativePath, destination: destination.name)
        }
        return plan
    }

    /// Decides what to do with one file that is not simply up to date, from its ledger row (nil: none). Returns
    /// false when the file is left out of this run altogether (`--failed` runs skip files that never failed).
    private func decide(_ plan: inout PlannedDelivery, entry: LedgerEntry?) -> Bool {
        let file = plan.file
        if let minAge = minAges[file.source], case let readyAt = file.modificationTime.addingTimeInterval(minAge.seconds), readyAt > now {
            // Not read, not recorded: it may still be being written. (A `--failed` run leaves out files that never
            // failed, as below.)
            if options.onlyFailed && (entry == nil || entry?.status == .synced) { return false }
            plan.action = .skip(.tooNew(minAge: minAge, readyAt: readyAt))
            return true
        }
        let hashLater = destination.destination.hashesWhileSending
        let sameStat = entry.map { $0.size == file.size && FileStat.sameModificationTime($0.modificationTime, file.modificationTime) } ?? false
        func unreadable(_ error: any Error) {
            plan.action = .fail(DeliveryFailure(message: DeliveryLayer.describe(error), failureClass: .retryable(), code: "unreadable", attempts: 0))
        }
        func hashed() -> String? {
            do {
                plan.sha256 = try FileHasher.sha256(path: file.absolutePath, sizeHint: file.size)
                return plan.sha256
            } catch {
                unreadable(error)
                return nil
            }
        }
        /// Whether the file may be read (a file to be hashed while it is sent is not read now, but one that cannot
        /// be read fails here as it would when hashed, without an attempt). `access` asks the same permission
        /// checks as `open`, in one call instead of an open and a close.
        func opens() -> Bool {
            guard access(file.absolutePath, R_OK) != 0 else { return true }
            unreadable(FileReader.openError(file.absolutePath))
            return false
        }
        guard let entry else {
            if options.onlyFailed { return false }
            // A new file is sent whatever its hash; a destination that hashes while sending saves a read.
            if hashLater ? opens() : hashed() != nil { plan.action = .upload(.new) }
            return true
        }
        switch entry.status {
        case .synced:
            if options.onlyFailed { return false }
            if pointedElsewhere {
                if hashed() != nil { plan.action = .upload(.missingAtDestination) }
            } else if let remoteNames, let name = plan.remoteName, !remoteNames.contains(ExactString(name)) {
                if hashed() != nil { plan.action = .upload(.missingAtDestination) }
            } else if sameStat {
                plan.sha256 = entry.sha256
                plan.action = .skip(.upToDate)
            } else if let sha = hashed() {
                plan.action = sha == entry.sha256 ? .skip(.touched) : .upload(.changed)
            }
        case .pending, .uploading:
            // A file that waits (its destination away) is planned again every run: unchanged, its planned hash
            // stands, so it is not read again each time.
            let ready: Bool
            if sameStat, let sha = entry.sha256 {
                plan.sha256 = sha
                ready = true
            } else {
                ready = hashLater && entry.sha256 == nil ? opens() : hashed() != nil
            }
            if ready { plan.action = .upload(entry.lastError == nil && entry.attempts == 0 ? .new : .retryRequested) }
        case .failed:
            let changed = !sameStat && hashed().map { $0 != entry.sha256 } == true
            if case .fail = plan.action { break }
            if changed {
                plan.action = .upload(.changed)
            } else if entry.errorCode == DestinationPlanner.nameClashCode {
                // Failed by this planning, not by the destination: looked at again each run, so that renaming one
                // of the files (as the error asks) lets the other go without `syncgate retry`. A clash still there
                // fails it again below, without an attempt.
                if plan.sha256 == nil, entry.sha256 != nil, sameStat { plan.sha256 = entry.sha256 }
                if plan.sha256 == nil, hashed() == nil { break }
                plan.action = .upload(.retryDue)
            } else if entry.errorClass == .permanent {
                plan.action = .skip(.failedPermanently(error: entry.lastError ?? ""))
            } else if let next = entry.nextRetryAt {
                if next <= now {
                    if plan.sha256 == nil, hashed() == nil { break }
                    plan.action = .upload(.retryDue)
                } else {
                    plan.action = .skip(.retryScheduled(at: next))
                }
            } else {
                plan.action = .skip(.gaveUp(failingSince: entry.firstFailedAt))
            }
        }
        return true
    }

    private func skip(_ plan: PlannedDelivery) throws {
        guard case .skip(let reason) = plan.action else { return }
        if case .tooNew(_, let readyAt) = reason {
            tooNew[plan.file.key] = readyAt
            if keepSkipped { keep(plan) }
            try skipped(plan)
            return
        }
        if verifiesListingLater, reason == .upToDate || reason == .touched {
            if reason == .touched { touched.append(plan.file) }
            unverified.append(dressed(plan))
            return
        }
        switch reason.stillFailed {
        case .none: upToDate += 1
        case .permanent?: stillFailedPermanently += 1
        default: stillFailedRetryable += 1
        }
        if reason == .touched { touched.append(plan.file) }
        if keepSkipped { keep(plan) }
        try skipped(plan)
    }

    /// What a destination's run needs of its plan (the planner itself stays with the scan).
    struct Outcome: Sendable {
        var destination: DestinationConfig
        var plans: [PlannedDelivery]
        var upToDate: Int, stillFailedRetryable: Int, stillFailedPermanently: Int
        var touched: [ScannedFile]
        /// Delivered files whose presence the destination's listing is to confirm (see ``unverified``).
        var unverified: [PlannedDelivery] = []
        /// Files younger than their source's `min_age`, with the time they are old enough (see ``tooNew``).
        var tooNew: [FileKey: Date] = [:]
    }

    /// The plans and counts gathered since the last wave, handed over and forgotten here (only where
    /// ``deliversInWaves``): the delivery's memory then stays flat however many files the scan finds.
    func takeWave() -> Outcome {
        precondition(deliversInWaves, "a destination whose names can clash is planned whole")
        defer {
            plans.removeAll()
            touched.removeAll()
            unverified.removeAll()
            tooNew.removeAll()
            upToDate = 0
            stillFailedRetryable = 0
            stillFailedPermanently = 0
        }
        return Outcome(destination: destination, plans: plans, upToDate: upToDate, stillFailedRetryable: stillFailedRetryable,
                       stillFailedPermanently: stillFailedPermanently, touched: touched, unverified: unverified, tooNew: tooNew)
    }

    /// The plans to act on (see ``finish(rescan:)``), with the counts.
    func outcome(rescan: ((ScannedFile) throws -> Void) throws -> Void) rethrows -> Outcome {
        Outcome(destination: destination, plans: try finish(rescan: rescan), upToDate: upToDate,
                stillFailedRetryable: stillFailedRetryable, stillFailedPermanently: stillFailedPermanently, touched: touched,
                unverified: unverified, tooNew: tooNew)
    }

    /// The error code of a file failed because another would be stored under its remote name.
    static let nameClashCode = "name-clash"

    /// The most other files a clash error names: past them, a count. (5,000 sources holding one name would otherwise
    /// make each of their 5,000 errors name all the others.)
    static let clashNamesShown = 3

    /// The error of `files[index]`, one of the files that would all be stored as `name`: it, and at most
    /// ``clashNamesShown`` of the others (`source/path`) then how many more.
    static func clashMessage(_ files: [ScannedFile], index: Int, name: String) -> String {
        func shown(_ file: ScannedFile) -> String { "'\(file.source)/\(file.relativePath)'" }
        let others = files.indices.lazy.filter { $0 != index }
        var text = "remote name clash: \(shown(files[index])) and " + others.prefix(clashNamesShown).map { shown(files[$0]) }.joined(separator: ", ")
        let more = files.count - 1 - min(clashNamesShown, files.count - 1)
        if more > 0 {
            var count = String(more)
            var at = count.count - 3
            while at > 0 {
                count.insert(",", at: count.index(count.startIndex, offsetBy: at))
                at -= 3
            }
            text += " and \(count) more"
        }
        return text + " would all be stored as '\(name)'; rename one of them"
    }

    /// The plans to act on, after failing every file that would be stored under the same remote name as another:
    /// nothing is overwritten. `rescan` walks the files again (only when a name hash repeated) for their names.
    private func finish(rescan: ((ScannedFile) throws -> Void) throws -> Void) rethrows -> [PlannedDelivery] {
        guard !repeatedHashes.isEmpty else { return plans }
        var byName: [ExactString: [ScannedFile]] = [:]
        try rescan { file in
            guard let name = try? destination.destination.remoteName(forRelativePath: file.relativePath) else { return }
            let key = ExactString(name)
            if repeatedHashes.contains(key.hashValue) { byName[key, default: []].append(file) }
        }
        var failures: [FileKey: DeliveryFailure] = [:]
        for (name, files) in byName where files.count > 1 {
            for (index, file) in files.enumerated() {
                failures[file.key] = DeliveryFailure(
                    message: DestinationPlanner.clashMessage(files, index: index, name: name.value),
                    failureClass: .permanent, code: DestinationPlanner.nameClashCode, attempts: 0)
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
