import Foundation

/// Judges each source a full walk went through before any of its files is marked removed, so that a mirror
/// (`delete_remote`) never deletes because the source went away rather than its files: a source whose root is
/// another folder than at its last complete walk (another device or inode: an unmounted mount point, a link switched
/// to another folder), that the walk found empty, or that lost more than its `max_delete_fraction` of the files of
/// that walk is held back when the walk finds any of its files gone: none of them is marked removed, nothing of it
/// is deleted anywhere, and what was recorded of it stays, so that the next run judges the same. A source never
/// walked to its end before, or the run's `--accept-source-changes`, is not judged. Only the sources routed to a
/// destination with `delete_remote` are judged (for the others a removal changes nothing outside the ledger), and
/// not those whose walk is split between a fleet's instances (no instance sees all their files).
///
/// Used on the walk's thread only.
struct SourceJudge {
    private let recorded: [String: SourceRoot]
    /// Each judged source's root as the walk started.
    private let identities: [String: (device: String, inode: String)]
    private let fractions: [String: Double]
    private let judged: Set<String>
    private let accepting: Bool
    /// Files the walk found, per source.
    private var found: [String: Int] = [:]
    /// Sources held back by this walk.
    private(set) var holds: [SyncSummary.SourceHold] = []

    init(config: GatewayConfig, ledger: Ledger, accepting: Bool, splitSources: Set<String>) throws {
        let mirrored = Set(config.destinations.filter(\.settings.deleteRemote).flatMap { config.sources(routedTo: $0.name) })
        judged = mirrored.subtracting(splitSources)
        recorded = judged.isEmpty ? [:] : try ledger.sourceRoots()
        self.accepting = accepting
        var identities: [String: (device: String, inode: String)] = [:]
        var fractions: [String: Double] = [:]
        for source in config.sources where judged.contains(source.name) {
            identities[source.name] = SourceRoot.identity(of: source.path)
            fractions[source.name] = source.maxDeleteFraction.value
        }
        self.identities = identities
        self.fractions = fractions
    }

    /// Whether the files of `source` the walk finds gone wait for its verdict (``verdict(source:gone:)``).
    func judges(_ source: String) -> Bool {
        !accepting && judged.contains(source) && recorded[source] != nil
    }

    /// Whether `source`'s root is another folder than at its last complete walk (a pass over a few files judges
    /// only this).
    func rootChanged(_ source: String) -> Bool {
        guard judges(source), let was = recorded[source] else { return false }
        guard let now = identities[source] else { return true }
        return now.device != was.device || now.inode != was.inode
    }

    mutating func noteFound(_ source: String) {
        found[source, default: 0] += 1
    }

    /// Judges a source whose walk ended, `gone` of whose files are gone: true when they may be marked removed,
    /// false when the source is held back (noted in ``holds``).
    mutating func verdict(source: String, gone: Int) -> Bool {
        guard judges(source), gone > 0, let was = recorded[source] else { return true }
        let fraction = fractions[source] ?? DeleteFraction.default.value
        let reason: String
        if rootChanged(source) {
            reason = identities[source] == nil
                ? "its folder is not there as a folder any more"
                : "its folder is another one than at its last complete walk (another device or inode: unmounted, or a link switched?)"
        } else if found[source, default: 0] == 0 {
            reason = "the walk found it empty"
        } else if Double(gone) > fraction * Double(was.files) {
            reason = "\(gone) of its \(was.files) files are gone, more than max_delete_fraction (\(DeleteFraction(fraction).text))"
        } else {
            return true
        }
        hold(SyncSummary.SourceHold(source: source, reason: reason, gone: gone))
        return false
    }

    /// Holds `source` back (a pass over a few files that found its root changed).
    mutating func hold(_ hold: SyncSummary.SourceHold) {
        if let index = holds.firstIndex(where: { $0.source == hold.source }) {
            holds[index].gone += hold.gone
        } else {
            holds.append(hold)
        }
    }

    /// What a complete walk records: each source's root and the files found, except the sources held back and those
    /// whose folder was not there.
    func roots(walkedAt now: Date, sources: [SourceConfig]) -> [SourceRoot] {
        let heldBack = Set(holds.map(\.source))
        return sources.compactMap { source in
            guard judged.contains(source.name), !heldBack.contains(source.name), let identity = identities[source.name] else { return nil }
            return SourceRoot(source: source.name, device: identity.device, inode: identity.inode, files: found[source.name] ?? 0, walkedAt: now)
        }
    }
}
