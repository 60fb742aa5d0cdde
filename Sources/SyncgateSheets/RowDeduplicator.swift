/// What syncgate knows about the key column of a destination's sheet, so that no row is appended twice.
///
/// - The key column is read (`values.get`) once per run, on first use, and the keys of every successful append
///   are added to it; keys are only ever added, so a later read is merged with what is known.
/// - When an append's outcome is unknown (the request went out and no answer came back), the knowledge is
///   dropped, and the file is remembered: before its rows are sent again, the key column is read afresh and
///   only rows whose key is not there yet are sent. One such read clears the mark.
/// - On a shared ledger, the knowledge is dropped when this instance's lead of the destination has a new epoch
///   (``writes(underLead:)``): rows that another leader appended, or had in flight, are then in the next read.
actor RowDeduplicator {
    private var known: Set<String>?
    private var loading: Task<[String], any Error>?
    private var unknownOutcome: Set<String> = []
    /// The lead under which ``known`` was learnt (a shared ledger; nil otherwise).
    private var leadEpoch: Int64?
    /// Reads of the key column made so far (for tests and logs).
    private(set) var reads = 0

    /// The keys in the sheet: cached, or read with `loader` (always read when `fresh`).
    func keys(fresh: Bool, loader: @escaping @Sendable () async throws -> [String]) async throws -> Set<String> {
        if !fresh, let known { return known }
        let task: Task<[String], any Error>
        if let loading {
            task = loading
        } else {
            task = Task { try await loader() }
            loading = task
            reads += 1
        }
        let values: [String]
        do {
            values = try await task.value
        } catch {
            if loading == task { loading = nil }
            throw error
        }
        if loading == task { loading = nil }
        var merged = known ?? []
        for value in values where !value.isEmpty { merged.insert(value) }
        known = merged
        return merged
    }

    /// Records the keys of rows the sheet confirmed.
    func appended(_ keys: some Sequence<String>) {
        guard known != nil else { return }
        for key in keys { known!.insert(key) }
    }

    /// An append of `file` went out without an answer: re-read before sending its rows again.
    func outcomeUnknown(file: String) {
        unknownOutcome.insert(file)
        known = nil
        // A read already under way may have started before that append landed: the next caller starts anew.
        loading = nil
    }

    /// This instance writes under lead `epoch` of a shared ledger. A new epoch (the lead was lost and taken again,
    /// or another instance led in between) makes what is known of the key column stale: another leader may have
    /// appended rows since, some of them for files whose rows are about to be sent again (their outcome unknown).
    /// The next append reads the key column afresh.
    func writes(underLead epoch: Int64) {
        guard epoch != leadEpoch else { return }
        leadEpoch = epoch
        known = nil
        loading = nil
    }

    func hadUnknownOutcome(file: String) -> Bool { unknownOutcome.contains(file) }

    /// The key column was read afresh after `file`'s unknown outcome: what is known now includes whatever that
    /// append did, so a later attempt (after a throttled or refused request) need not read it again.
    func rechecked(file: String) { unknownOutcome.remove(file) }

    func delivered(file: String) { unknownOutcome.remove(file) }
}
