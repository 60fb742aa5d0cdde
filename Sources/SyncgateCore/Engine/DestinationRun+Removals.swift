import Foundation

extension DestinationRun {
    /// Error codes that mean "already gone" when a deletion is refused with them (the local folder's and the
    /// plugin protocol's `not-found`, a head unit's, an S3-compatible server's).
    static let goneCodes: Set<String> = ["not-found", "FILE_NOT_FOUND", "NoSuchKey"]

    /// Deletes the copies of files removed from their source (`delete_remote: true`), after the run's uploads, so
    /// that a renamed file's new copy is there before its old one goes. Nothing of a source held back is deleted. A
    /// run that would delete more than `max_delete` (a gateway: more than it allows for the last hour) deletes
    /// nothing here and says so (exit 1): an unmounted or emptied source must not empty the destination. A copy
    /// whose name another file of the ledger now uses is kept. Then the rows marked removed longer than
    /// `recent.completed` ago are dropped (those still to be deleted stay).
    func handleRemovals() async throws {
        let settings = destination.settings
        let name = destination.name
        if settings.deleteRemote, !options.dryRun, !cancellation.isCancelled, breaker.failure == nil {
            try await deleteRemoved()
        }
        if !options.dryRun {
            try await ledger.dropRemoved(destination: name, before: clock.now() - settings.recentCompleted.seconds, keepingDeletions: settings.deleteRemote)
        }
    }

    /// The window over which a gateway counts `max_delete` (a `sync` counts per run).
    static let deleteWindow: TimeInterval = 3600

    private func deleteRemoved() async throws {
        let plugin = destination.destination
        let name = destination.name
        // Nothing of a source held back is deleted (``SourceJudge``), whenever its files were marked removed.
        let held = holds.sources
        let rows = try await ledger.remoteDeletions(destination: name).filter { !held.contains($0.file.source) }
        guard !rows.isEmpty else { return }
        let limit = options.maxDelete ?? destination.settings.maxDelete
        // A gateway counts what it deleted in the last hour too, so that files removed a few at a time between its
        // passes cannot go past max_delete; `sync` (and its --max-delete) counts this run alone.
        let recent = options.isGatewayPass && options.maxDelete == nil
            ? try await ledger.remoteDeletions(destination: name, within: DestinationRun.deleteWindow, before: clock.now()) : 0
        guard rows.count <= limit - recent else {
            // The run's summary says it; a gateway, which prints none, logs it.
            if options.isGatewayPass {
                logger.error("\(name): \(rows.count) files were removed from the sources; deleting their copies would exceed max_delete (\(limit) per hour, \(recent) deleted in the last hour), so none was deleted. If the sources are as they should be, raise max_delete, or stop the gateway and run `syncgate sync --max-delete \(rows.count)` once.")
            }
            tally.update { $0.deleteLimits.append(SyncSummary.DeleteLimit(destination: name, wanted: rows.count, limit: limit, deletedRecently: recent)) }
            return
        }
        // Names still used by files in the sources (a file of another source, or one that maps to the same name).
        let inUse: Set<String> = !namesCanClash ? [] : try await ledger.offThread { [ledger] in
            try ledger.withRows(destination: name) { stream in
                var names = Set<String>()
                while let key = stream.key {
                    if stream.removed == nil, let remote = try? plugin.remoteName(forRelativePath: key.path) { names.insert(remote) }
                    try stream.advance()
                }
                return names
            }
        }
        var kept: [FileKey] = []
        var byName: [String: [FileKey]] = [:]
        for row in rows {
            guard let remote = row.receipt?.remoteName ?? (try? plugin.remoteName(forRelativePath: row.file.path)) else { continue }
            if inUse.contains(remote) { kept.append(row.file) } else { byName[remote, default: []].append(row.file) }
        }
        try await ledger.noteRemoteRemoval(kept, destination: name, how: .remoteKept, at: clock.now())
        let names = byName.keys.sorted()
        var deleted: [FileKey] = []
        var failed = 0
        // Through the delivery layer's one retry loop (backoff, Retry-After, throttling, the breaker), in groups so
        // that the ledger notes progress as it goes.
        let (layer, _) = deliveryLayer()
        let chunk = 1000
        var index = 0
        while index < names.count, !cancellation.isCancelled {
            let group = Array(names[index..<min(names.count, index + chunk)])
            index += group.count
            let failures = await layer.deleteMany(group, cancellation: cancellation)
            for remote in group {
                if let failure = failures[remote], !DestinationRun.goneCodes.contains(failure.code ?? "") {
                    if failure.scope == .file, !failure.isCancellation {
                        logger.warning("\(name): cannot delete \(remote) (its source file was removed): \(failure.message)")
                    }
                    failed += 1
                } else {
                    deleted.append(contentsOf: byName[remote] ?? [])
                    logger.info("\(name): deleted \(remote) (its source file was removed)")
                }
            }
            if let away = layer.breaker.failure {
                logger.warning("\(name): deleting copies of removed files stopped: \(away.message); the rest are deleted in a later run")
                failed += names.count - index
                break
            }
        }
        try await ledger.noteRemoteRemoval(deleted, destination: name, how: .remoteDeleted, at: clock.now())
        try await ledger.noteRemoteDeletions(deleted.count, destination: name, at: clock.now(), window: DestinationRun.deleteWindow)
        tally.update {
            $0.remoteDeleted += deleted.count
            $0.remoteDeleteFailed += failed
        }
    }
}
