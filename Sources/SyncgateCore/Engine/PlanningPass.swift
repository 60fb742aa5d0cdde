import Foundation

/// Scans the sources and plans every destination, on a thread of its own, handing the plans to the deliveries
/// through a ``WaveFeed`` while the scan goes on.
///
/// A destination whose names cannot clash (``DestinationPlanner/deliversInWaves``) gets its plans in waves of
/// about ``defaultWaveSize`` files: while it sends one wave the next is planned, and the scan waits when it is a wave
/// ahead. A first sync of any size then holds a few waves in memory, not a plan per file. A destination whose
/// names can clash (a head unit, several sources into one folder) gets its whole plan once every file routed to
/// it was seen; the sources feeding such destinations are walked first, without waiting for the waves, so that it
/// starts at once however slow the others are, while they are still being planned.
///
/// The ledger is read beside the walk, one short read transaction per source and wave (see
/// ``Ledger/withRows(source:after:_:)``).
///
/// Unchecked: its mutable fields belong to the planning thread (``run()``); the task that awaits `run()` reads the
/// results (`holdChanges`, `removedFiles`, `walkedAll`) only after that thread is done.
final class PlanningPass: @unchecked Sendable {
    /// Files kept per wave (uploads and failures; up-to-date files are only counted).
    static let defaultWaveSize = 4096
    /// Files whose rows a gateway's pass looks up in one statement.
    static let lookupBatch = 256

    let config: GatewayConfig
    let ledger: Ledger
    let planners: [DestinationPlanner]
    let feed: WaveFeed
    let tally: SummaryTally
    let cancellation: CancellationHandle
    let warn: @Sendable (ScanWarning) -> Void
    /// The sources in the order they are walked.
    let sources: [SourceConfig]
    private let waveSize: Int
    /// Waves handed over so far, per planner.
    private var wavesSent: [Int]
    private var plannerByName: [String: DestinationPlanner] = [:]
    /// Sources feeding the planners planned whole, not walked to their end yet.
    private var wholeSourcesLeft: Set<String>
    private var wholeHandedOver = false
    private var walk: (any FileWalk)?
    /// Only these files (a gateway's pass), instead of every file of every source.
    private let paths: [FileKey]?
    private var chunk: [ScannedFile] = []
    private var chunkIndex = 0
    private var fileCount = 0
    /// Marks the ledger's files the walk does not find (a walk that records; nil otherwise), once its source is
    /// judged (``SourceJudge``). Both set when the walk starts.
    private var removals: RemovalDetector?
    private var judge: SourceJudge?
    private let detectsRemovals: Bool
    private let now: Date
    /// The run's `--accept-source-changes`: no source is judged, and each one's root is recorded as found.
    private let acceptsSourceChanges: Bool
    /// The sources held back, kept across a gateway's passes: updated by this pass's verdicts before any
    /// destination deletes (a full walk's releases them too). What changed is in ``holdChanges``.
    private let holds: SourceHolds
    private(set) var holdChanges = SourceHolds.HoldChanges()
    /// Per source, the last path whose rows the walk looked up: its rows after that are read once its walk ends.
    private var lastSeeked: [String: String] = [:]
    /// Sources whose walk ended, whose remaining rows are still to be read for removals.
    private var finishedSources: [String] = []
    /// Files marked removed in this pass.
    private(set) var removedFiles = 0
    /// The full walk went to its end (it was not stopped): every file of the walked sources (of this instance's
    /// share, where split) was planned.
    private(set) var walkedAll = false
    /// Sources whose full walk is split between a fleet's instances: only this instance's `share` of their files
    /// is walked and planned, and only its share of their ledger rows can be found removed.
    private let splitSources: Set<String>
    private let share: FleetShare?

    init(config: GatewayConfig, ledger: Ledger, planners: [DestinationPlanner], feed: WaveFeed, tally: SummaryTally,
         cancellation: CancellationHandle, waveSize: Int, paths: [FileKey]? = nil, share: FleetShare? = nil, splitSources: Set<String> = [], detectsRemovals: Bool = false,
         acceptsSourceChanges: Bool = false, holds: SourceHolds = SourceHolds(), now: Date = Date(), warn: @escaping @Sendable (ScanWarning) -> Void) {
        self.paths = paths
        self.share = paths == nil ? share : nil
        self.splitSources = splitSources
        self.detectsRemovals = detectsRemovals
        self.acceptsSourceChanges = acceptsSourceChanges
        self.holds = holds
        self.now = now
        self.config = config
        self.ledger = ledger
        self.planners = planners
        self.feed = feed
        self.tally = tally
        self.cancellation = cancellation
        self.waveSize = waveSize
        self.wavesSent = Array(repeating: 0, count: planners.count)
        self.warn = warn
        for planner in planners where plannerByName[planner.destination.name] == nil { plannerByName[planner.destination.name] = planner }
        var whole = Set<String>()
        for planner in planners where !planner.deliversInWaves { whole.formUnion(config.sources(routedTo: planner.destination.name)) }
        wholeSourcesLeft = Set(config.sources.map(\.name)).intersection(whole)
        wholeHandedOver = planners.allSatisfy(\.deliversInWaves)
        // The sources of whole plans first, then the others; each group in the byte order of the names.
        let byName = config.sources.sorted { ExactString.compare($0.name, $1.name) < 0 }
        sources = byName.filter { whole.contains($0.name) } + byName.filter { !whole.contains($0.name) }
    }

    /// Runs the pass on a thread of its own; returns when every wave was handed over (or the run stopped).
    func run() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let thread = Thread { [self] in continuation.resume(with: Result { try plan() }) }
            thread.name = "syncgate.plan"
            thread.stackSize = 8 << 20  // a clash check walks the sources again here, recursing once per folder level
            thread.start()
        }
    }

    private var stopping: Bool { feed.isStopped || cancellation.isCancelled }

    private func plan() throws {
        if detectsRemovals { try startJudging() }
        let walk: any FileWalk = paths.map { PathWalk(sources: sources, paths: $0) } ?? ScanPipeline(sources: sources, share: share, splitSources: splitSources)
        self.walk = walk
        var removalError: (any Error)? = nil
        defer {
            walk.stop()
            // Marks written before any destination's run reads them (its remote deletions), or the error kept.
            do {
                removedFiles = try removals?.finish() ?? 0
            } catch {
                removalError = error
            }
            feed.finish()
        }
        if paths != nil {
            // A few chosen files: their rows are looked up by their keys, a batch of files at a time (one
            // statement, not one round trip per file), not read beside a walk.
            var found = Set<FileKey>()
            while !stopping, let file = peek() {
                try handOver(final: false)
                if stopping { break }
                // A chunk holds one source's files in key order: the next ones, with their rows in one read.
                let batch = chunk[chunkIndex..<min(chunk.count, chunkIndex + Self.lookupBatch)].prefix { $0.source == file.source }
                try ledger.withRows(source: file.source, paths: batch.map(\.relativePath)) { rows in
                    for next in batch {
                        chunkIndex += 1
                        found.insert(next.key)
                        try consider(next, rows: rows)
                        if handOverDue || stopping { return }
                    }
                }
            }
            // Those not found (deleted, renamed away): their rows are marked removed once the file is seen gone.
            if let removals, let paths, !stopping {
                let gone = Set(paths).subtracting(found).sorted(by: <)
                for start in stride(from: 0, to: gone.count, by: Self.lookupBatch) {
                    let part = gone[start..<min(gone.count, start + Self.lookupBatch)]
                    for source in Set(part.map(\.source)).sorted(by: { ExactString.compare($0, $1) < 0 }) {
                        try ledger.withRows(source: source, paths: part.filter { $0.source == source }.map(\.path)) { rows in
                            var marked: FileKey? = nil
                            while let key = rows.key {
                                if rows.removed == nil, key != marked {
                                    removals.missing(key)
                                    marked = key
                                }
                                try rows.advance()
                            }
                        }
                    }
                }
                // Only a changed root is judged here (the counts need a full walk); a source held back by an
                // earlier walk marks nothing.
                for source in sources.map(\.name) { settle(source) }
                holdChanges = holds.update(judged: [], holds: judge?.holds ?? [])
                noteHolds()
            }
            tally.update { $0.files = fileCount }
            if !stopping { try handOver(final: true) }
            return
        }
        var last: (source: String, path: String)? = nil
        while !stopping, let first = peek() {
            try handOver(final: false)
            if stopping { break }
            let after = last?.source == first.source ? last?.path : nil
            try ledger.withRows(source: first.source, after: after) { rows in
                while let file = peek(), file.source == first.source {
                    chunkIndex += 1
                    try consider(file, rows: rows)
                    last = (file.source, file.relativePath)
                    // What is due is handed over outside the read transaction; an interruption is looked for
                    // between chunks.
                    if handOverDue || (chunkIndex == chunk.count && stopping) { return }
                }
            }
            try readRemainingRows()
        }
        if !stopping { try readRemainingRows() }
        tally.update { $0.files = fileCount }
        if let judge, !stopping {
            // Before any destination deletes (their runs wait for the feed to finish).
            holdChanges = holds.update(judged: Set(sources.map(\.name)), holds: judge.holds)
            noteHolds()
        }
        if !stopping { try handOver(final: true) }
        if let removalError { throw removalError }
        walkedAll = !stopping
        if walkedAll, let judge {
            for root in judge.roots(walkedAt: now, sources: sources) { try ledger.recordSourceRoot(root) }
        }
    }

    /// Sets up the judge of the sources and the removal detector for this walk: a full walk holds each judged
    /// source's files not found until its walk ends; a walk of a few files holds those of a source whose root
    /// changed, and passes over those of a source already held back.
    private func startJudging() throws {
        let judge = try SourceJudge(config: config, ledger: ledger, accepting: acceptsSourceChanges, splitSources: splitSources)
        let names = config.sources.map(\.name)
        let holding: Set<String>
        var skipping: Set<String> = []
        if paths == nil {
            holding = Set(names.filter { judge.judges($0) })
        } else {
            skipping = acceptsSourceChanges ? [] : holds.sources
            holding = Set(names.filter { judge.rootChanged($0) }).subtracting(skipping)
        }
        self.judge = judge
        removals = RemovalDetector(ledger: ledger, sources: config.sources, now: now, holding: holding, skipping: skipping)
    }

    /// Judges a source whose walk ended, from its files found gone.
    private func settle(_ source: String) {
        removals?.settle(source) { gone in judge?.verdict(source: source, gone: gone) ?? true }
    }

    /// The run's summary lists the sources held back.
    private func noteHolds() {
        guard let held = judge?.holds, !held.isEmpty else { return }
        tally.update { summary in
            for hold in held where !summary.heldBack.contains(where: { $0.source == hold.source }) { summary.heldBack.append(hold) }
        }
    }

    /// Reads, for removals, the rows of the sources whose walk ended that come after the last file found.
    private func readRemainingRows() throws {
        guard let removals else { return }
        for source in finishedSources {
            try ledger.withRows(source: source, after: lastSeeked[source]) { rows in
                while let key = rows.key {
                    if rows.removed == nil, owns(key) { removals.missing(key) }
                    try rows.advance()
                }
            }
            settle(source)
        }
        finishedSources.removeAll()
    }

    /// The next file of the walk, without taking it; source ends met on the way are handled. Nil at the end.
    private func peek() -> ScannedFile? {
        while chunkIndex >= chunk.count {
            guard let item = walk?.next() else { return nil }
            switch item {
            case .files(let files):
                chunk = files
                chunkIndex = 0
            case .finished(let source, let warnings):
                for warning in warnings {
                    warn(warning)
                    tally.update { summary in
                        if warning.sourceMissing { summary.sourcesFailed += 1 } else { summary.warnings += 1 }
                    }
                }
                wholeSourcesLeft.remove(source)
                if removals != nil && paths == nil && !stopping { finishedSources.append(source) }
            }
        }
        return chunk[chunkIndex]
    }

    /// Plans one file at every destination it is routed to, beside its ledger rows.
    private func consider(_ file: ScannedFile, rows: LedgerRowStream) throws {
        let key = file.key
        // The walk ran ahead with the view of a moment ago: a file that an instance which joined since now owns is
        // left to it (its rows are passed over like those of any file of another share).
        guard owns(key) else {
            while let at = rows.key, at <= key {
                if let removals, rows.removed == nil, at < key, owns(at) { removals.missing(at) }
                try rows.advance()
            }
            if removals != nil { lastSeeked[key.source] = key.path }
            return
        }
        fileCount += 1
        judge?.noteFound(file.source)
        let routed = config.destinations(forSource: file.source, relativePath: file.relativePath)
        guard !routed.isEmpty else { return }
        while let at = rows.key, at < key {
            if let removals, rows.removed == nil, owns(at) { removals.missing(at) }
            try rows.advance()
        }
        if removals != nil { lastSeeked[key.source] = key.path }
        var planned: [String] = []
        while rows.key == key {
            let removed = rows.removed
            if removed != nil { removals?.present(key) }
            // A copy syncgate deleted (`delete_remote`) is gone: the file is new to that destination again.
            if removed != .remoteDeleted, let name = rows.destination, routed.contains(name), let planner = plannerByName[name] {
                try planner.consider(file, rows: rows, found: true)
                planned.append(name)
            }
            try rows.advance()
        }
        for name in routed where !planned.contains(name) {
            try plannerByName[name]?.consider(file, rows: rows, found: false)
        }
    }

    /// Whether `key` is this instance's to plan (always, unless its source's walk is split).
    private func owns(_ key: FileKey) -> Bool {
        guard let share, splitSources.contains(key.source) else { return true }
        return share.owns(source: key.source, path: key.path)
    }

    /// How many files make planner `index`'s next wave full. A split walk's first waves are small (4, 8, ... up to
    /// `waveSize`): each wave is claimed when it is recorded, one wave ahead of the uploads, and an instance that
    /// starts a moment before the others would otherwise claim whole waves of their shares before it sees them join.
    private func waveLimit(_ index: Int) -> Int {
        guard share != nil else { return waveSize }
        return min(waveSize, 4 << min(wavesSent[index], 16))
    }

    /// Whether a wave is full, or the whole plans can go.
    private var handOverDue: Bool {
        (!wholeHandedOver && wholeSourcesLeft.isEmpty) || planners.indices.contains { planners[$0].deliversInWaves && planners[$0].keptCount >= waveLimit($0) }
    }

    /// Hands over full waves, and the whole plans once their sources were walked; at the end, everything.
    private func handOver(final: Bool) throws {
        if !wholeHandedOver && (final || wholeSourcesLeft.isEmpty) {
            wholeHandedOver = true
            for (index, planner) in planners.enumerated() where !planner.deliversInWaves {
                let outcome = try planner.outcome { body in try rescan(routedTo: planner.destination.name, body) }
                if !feed.send(outcome, to: index) { return }
            }
        }
        // Until the whole plans are handed over, waves do not hold up the walk: a destination planned whole must
        // not wait for another's uploads (what it holds grows with those files anyway).
        for (index, planner) in planners.enumerated() where planner.deliversInWaves && (final || planner.keptCount >= waveLimit(index)) {
            wavesSent[index] += 1
            if !feed.send(planner.takeWave(), to: index, wait: wholeHandedOver) { return }
        }
    }

    /// Walks the sources again for the files routed to one destination (a planner settling a repeated name hash).
    private func rescan(routedTo destination: String, _ body: (ScannedFile) throws -> Void) throws {
        for source in sources where config.sources(routedTo: destination).contains(source.name) {
            _ = try SourceScanner().scan(source) { file in
                if config.destinations(forSource: file.source, relativePath: file.relativePath).contains(destination) { try body(file) }
            }
        }
    }
}
