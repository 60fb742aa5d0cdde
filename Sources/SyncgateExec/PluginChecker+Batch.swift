import Foundation
import SyncgateCore

/// `plugin check`'s step for a plugin that speaks batches.
extension PluginChecker {
    /// With `batch`: puts sent together as one batch line, each answered once by its id (in any order, in batches
    /// or line by line). A plugin that breaks the framing (an empty batch, one holding anything but answers) is
    /// killed for it, and the step says what it wrote.
    func batch(_ run: CheckRun, capabilities: PluginCapabilities) async {
        let count = 8
        let name = "a batch of \(count) puts in one line, each answered once by its id"
        guard capabilities.batch else {
            run.record(name, true, "skipped: no batch capability (requests go a line each)")
            return
        }
        guard let session = await run.session() else {
            run.record(name, false, "the plugin could not be started again")
            return
        }
        var items: [UploadItem] = []
        for index in 0..<count {
            let size = 500 + index * 97
            items.append(item(small(run, "batch-source-\(index)", size: size, seed: 60 + index), name: "batch-\(index).txt", size: Int64(size)))
        }
        let destination = run.destination
        // Held while the puts are posted, then written at once: one batch line.
        session.outbox.hold()
        let outcomes = await withTaskGroup(of: (String, String?).self) { group in
            for item in items {
                group.addTask { await PluginChecker.put(item, to: destination) }
            }
            let posted = ContinuousClock.now
            while session.outbox.queued < count, ContinuousClock.now - posted < .seconds(5), !session.isEnded {
                try? await Task.sleep(for: .milliseconds(5))
            }
            try? session.outbox.release()
            var all: [(String, String?)] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        let bad = CheckRun.grouped(outcomes.compactMap { name, problem in problem.map { (PluginChecker.show(name), $0) } })
        run.record(name, bad.isEmpty, bad.isEmpty ? nil : bad.joined(separator: "; "))
        if capabilities.delete {
            for item in items { try? await destination.delete(remoteName: item.remoteName) }
        }
    }
}
