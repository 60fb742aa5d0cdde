import Foundation
import SyncgateCore
import SyncgateJSON

/// The steps of ``PluginChecker``, in the order they run.
extension PluginChecker {
    /// One put of the check: the remote name, and nil or what went wrong.
    static func put(_ item: UploadItem, to destination: ExecDestination) async -> (String, String?) {
        do {
            _ = try await destination.upload(item) { _ in }
            return (item.remoteName, nil)
        } catch {
            return (item.remoteName, "failed: \(DeliveryLayer.describe(error))")
        }
    }

    /// Puts of awkward names, all in flight together.
    func putAwkwardNames(_ run: CheckRun) async -> [UploadItem] {
        _ = await run.session()
        var items: [UploadItem] = []
        for (index, name) in PluginChecker.awkwardNames.enumerated() {
            let size = 1000 + index * 313
            items.append(item(small(run, "source-\(index)", size: size, seed: index), name: name, size: Int64(size)))
        }
        let destination = run.destination
        let outcomes = await withTaskGroup(of: (String, String?).self) { group in
            for item in items {
                group.addTask { await PluginChecker.put(item, to: destination) }
            }
            var all: [(String, String?)] = []
            for await outcome in group { all.append(outcome) }
            return all
        }
        let bad = CheckRun.grouped(outcomes.compactMap { name, problem in problem.map { (PluginChecker.show(name), $0) } })
        run.record("put of \(items.count) awkward names, in flight together, each answered once, progress never going back",
                   bad.isEmpty, bad.isEmpty ? nil : bad.joined(separator: "; "))
        return items
    }

    /// `list` names what was put; `delete` removes each name, and a name that is not there is a permanent file error.
    func listAndDelete(_ run: CheckRun, items: [UploadItem], capabilities: PluginCapabilities) async {
        _ = await run.session()
        let destination = run.destination
        if capabilities.list {
            do {
                let names = try await destination.list().names
                let missing = items.map(\.remoteName).filter { !names.contains($0) }
                run.record("list names what was put", missing.isEmpty,
                           missing.isEmpty ? "\(names.count) names" : "missing: \(missing.map(PluginChecker.show).joined(separator: ", "))")
            } catch {
                run.record("list names what was put", false, DeliveryLayer.describe(error))
            }
        } else {
            run.record("list", true, "skipped: no list capability")
        }
        guard capabilities.delete else {
            run.record("delete", true, "skipped: no delete capability")
            return
        }
        _ = await run.session()
        var problems: [String] = []
        for item in items {
            do { try await destination.delete(remoteName: item.remoteName) } catch { problems.append("\(PluginChecker.show(item.remoteName)): \(DeliveryLayer.describe(error))") }
        }
        if capabilities.list, problems.isEmpty, let names = try? await destination.list().names {
            let left = items.map(\.remoteName).filter { names.contains($0) }
            if !left.isEmpty { problems.append("still listed after delete: \(left.map(PluginChecker.show).joined(separator: ", "))") }
        }
        do {
            try await destination.delete(remoteName: "syncgate-check-never-put.txt")
            problems.append("deleting a name that is not there succeeded")
        } catch let error as DestinationError where error.scope == .file && error.failureClass == .permanent {
        } catch {
            problems.append("deleting a name that is not there: expected a permanent file error, got \(DeliveryLayer.describe(error))")
        }
        run.record("delete removes each name; a missing one is a permanent file error", problems.isEmpty, problems.isEmpty ? nil : problems.joined(separator: "; "))
    }

    /// With `batch_delete`: one `delete` of two names put and one never put fails only the latter.
    func batchDelete(_ run: CheckRun, capabilities: PluginCapabilities) async {
        let name = "batch delete of 2 names put and 1 never put fails only the last"
        guard capabilities.batchDelete else {
            run.record(name, true, "skipped: no batch_delete capability")
            return
        }
        _ = await run.session()
        let destination = run.destination
        var problems: [String] = []
        let names = ["batch-a.txt", "batch-b.txt"]
        for (index, remote) in names.enumerated() {
            let url = small(run, remote, size: 700, seed: 40 + index)
            do { _ = try await destination.upload(item(url, name: remote, size: 700)) { _ in } } catch { problems.append("put \(remote): \(DeliveryLayer.describe(error))") }
        }
        let missing = "syncgate-check-never-put.txt"
        do {
            let failed = try await destination.delete(remoteNames: names + [missing])
            for (remote, error) in failed where remote != missing { problems.append("\(remote) failed: \(error.message)") }
            if let error = failed[missing] {
                if error.failureClass != .permanent || error.scope != .file { problems.append("\(missing): expected a permanent file error, got \(error.classification)") }
            } else {
                problems.append("\(missing) (never put) is not in \"failed\"")
            }
            if capabilities.list, let listed = try? await destination.list().names {
                let left = names.filter { listed.contains($0) }
                if !left.isEmpty { problems.append("still listed: \(left.joined(separator: ", "))") }
            }
        } catch {
            problems.append(DeliveryLayer.describe(error))
        }
        run.record(name, problems.isEmpty, problems.isEmpty ? nil : problems.joined(separator: "; "))
    }

    /// A file that cannot be read is the file's problem.
    func unreadable(_ run: CheckRun) async {
        _ = await run.session()
        let name = "put of a file that cannot be read fails (file scope)"
        do {
            _ = try await run.destination.upload(item(run.folder.appendingPathComponent("no-such-file"), name: "unreadable.txt", size: 10)) { _ in }
            run.record(name, false, "it succeeded")
        } catch let error as DestinationError {
            run.record(name, error.scope == .file, "\(error.classification): \(error.message)")
        } catch {
            run.record(name, false, DeliveryLayer.describe(error))
        }
    }

    /// A large file (sparse: it costs no disk); returns it for the cancel step.
    func largeFile(_ run: CheckRun, capabilities: PluginCapabilities) async -> URL {
        _ = await run.session()
        let large = run.folder.appendingPathComponent("large.bin")
        _ = FileManager.default.createFile(atPath: large.path, contents: nil)
        if let handle = try? FileHandle(forWritingTo: large) {
            try? handle.truncate(atOffset: UInt64(largeSize))
            try? handle.close()
        }
        let name = "put of a \(largeSize >> 20) MiB file"
        do {
            let started = ContinuousClock.now
            _ = try await run.destination.upload(item(large, name: "large.bin", size: largeSize)) { _ in }
            run.record(name, true, (ContinuousClock.now - started).syncgateText)
            if capabilities.delete { try? await run.destination.delete(remoteName: "large.bin") }
        } catch {
            run.record(name, false, DeliveryLayer.describe(error))
        }
        return large
    }

    /// With `existing_copy`: `exists` finds a file put under its name and bytes, and not a name never put nor other
    /// bytes.
    func exists(_ run: CheckRun, capabilities: PluginCapabilities) async {
        let name = "exists: a receipt for the bytes put, none for other bytes or a name never put"
        guard capabilities.existingCopy else {
            run.record(name, true, "skipped: no existing_copy capability")
            return
        }
        _ = await run.session()
        let destination = run.destination
        let url = small(run, "exists-source", size: 1500, seed: 77)
        let sha = (try? FileHasher.sha256(path: url.path)) ?? ""
        let put = item(url, name: "exists.txt", size: 1500, sha256: sha)
        var problems: [String] = []
        do {
            _ = try await destination.upload(put) { _ in }
            if try await destination.existingCopy(of: put) == nil { problems.append("no receipt for the file just put") }
            if try await destination.existingCopy(of: item(url, name: "exists.txt", size: 1500, sha256: String(repeating: "0", count: 64))) != nil {
                problems.append("a receipt for other bytes (sha256 0000...) under the same name")
            }
            if try await destination.existingCopy(of: item(url, name: "syncgate-check-never-put.txt", size: 1500, sha256: sha)) != nil {
                problems.append("a receipt for a name never put")
            }
        } catch {
            problems.append(DeliveryLayer.describe(error))
        }
        if capabilities.delete { try? await destination.delete(remoteName: "exists.txt") }
        run.record(name, problems.isEmpty, problems.isEmpty ? nil : problems.joined(separator: "; "))
    }

    /// With `probe`: a probe is answered `ok` (the settings given work).
    func probe(_ run: CheckRun, capabilities: PluginCapabilities) async {
        let name = "probe is answered ok"
        guard capabilities.probe else {
            run.record(name, true, "skipped: no probe capability (starting the plugin is its probe)")
            return
        }
        _ = await run.session()
        let started = ContinuousClock.now
        do {
            try await run.destination.probe()
            run.record(name, true, "in \((ContinuousClock.now - started).syncgateText)")
        } catch {
            run.record(name, false, DeliveryLayer.describe(error))
        }
    }

    /// Cancel: the plugin ends a cancelled put within the grace (else the host kills it as hung). For a plugin
    /// that paces, the put is paced slowly (the large file at ``cancelRate``), so that a plugin that goes on after
    /// the cancel is still at it well past the grace, and one that does not wait for its grants is seen.
    func cancel(_ run: CheckRun, large: URL, capabilities: PluginCapabilities) async {
        let session = await run.session()
        let destination = run.destination
        let seconds = Double(largeSize) / cancelRate
        let name = capabilities.paces
            ? "cancel ends a put paced at \(ByteSize.format(Int64(cancelRate)))/s (\(Int(seconds)) s in all) within \(spec.cancelGrace.syncgateText)"
            : "cancel ends a put within \(spec.cancelGrace.syncgateText)"
        let pacing = capabilities.paces ? SendPacing(bucket: TokenBucket(perSecond: cancelRate, burst: 64 * 1024)) : nil
        let cancelled = item(large, name: "cancelled.bin", size: largeSize)
        let started = ContinuousClock.now
        let upload = Task { try await SendPacing.$current.withValue(pacing) { try await destination.upload(cancelled) { _ in } } }
        try? await Task.sleep(for: .milliseconds(500))
        upload.cancel()
        let finished = (try? await upload.value) != nil
        let took = ContinuousClock.now - started
        // Until the plugin ended the cancelled put, or was killed for not ending it within the grace (with a wide
        // margin for a busy machine: the kill is what fails the step, not this wait).
        let deadline = ContinuousClock.now + spec.cancelGrace + .seconds(5)
        while let session, !session.isEnded, session.cancelledInFlight > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if finished && capabilities.paces && took < .seconds(seconds / 2) {
            run.record(name, false, "the paced put of \(largeSize >> 20) MiB ended in \(took.syncgateText): the plugin did not wait for its grants")
        } else if finished && !capabilities.paces {
            run.record(name, true, "the put ended before the cancel (a plugin that does not pace cannot be slowed down, so ignoring a cancel is not seen here)")
        } else {
            run.record(name, true)
        }
        if capabilities.delete { try? await destination.delete(remoteName: "cancelled.bin") }
    }

    /// With `faults`: errors of each class and scope, and a `retry_after` passed on.
    func faults(_ run: CheckRun, capabilities: PluginCapabilities) async {
        guard capabilities.faults else {
            run.record("errors of each class and scope", true, "skipped: no faults capability")
            run.record("Retry-After", true, "skipped: no faults capability")
            return
        }
        _ = await run.session()
        let destination = run.destination
        let small = self.small(run, "fault-source", size: 1000, seed: 9)
        func ask(_ failureClass: FailureClass, _ scope: FailureScope, retryAfter: Int?) async -> String? {
            var fault: [String: JSONValue] = ["class": .string(failureClass.name), "scope": .string(scope.rawValue)]
            if let retryAfter { fault["retry_after"] = .int(Int64(retryAfter)) }
            let label = "\(failureClass.name)/\(scope.rawValue)\(retryAfter.map { " retry_after \($0)" } ?? "")"
            do {
                _ = try await destination.put(item(small, name: "fault.txt", size: 1000), fault: .object(sorting: fault))
                return "\(label): it succeeded (the fault was ignored)"
            } catch let error as DestinationError {
                if error.failureClass.name != failureClass.name || error.scope != scope { return "\(label): answered \(error.classification)" }
                if let retryAfter, error.failureClass.retryAfter != .seconds(retryAfter) {
                    return "\(label): answered retry_after \(error.failureClass.retryAfter.map { $0.syncgateText } ?? "none")"
                }
                return nil
            } catch {
                return "\(label): \(DeliveryLayer.describe(error))"
            }
        }
        var problems: [String] = []
        for failureClass in [FailureClass.retryable(), .permanent, .deferred()] {
            for scope in [FailureScope.file, .destination] {
                if let problem = await ask(failureClass, scope, retryAfter: nil) { problems.append(problem) }
            }
        }
        run.record("errors of each class and scope (retryable, permanent, deferred x file, destination)", problems.isEmpty,
                   problems.isEmpty ? nil : problems.joined(separator: "; "))
        _ = await run.session()
        problems = []
        for (failureClass, scope) in [(FailureClass.deferred(), FailureScope.destination), (.retryable(), .file)] {
            if let problem = await ask(failureClass, scope, retryAfter: 7) { problems.append(problem) }
        }
        run.record("Retry-After: a fault's retry_after comes back in the error (deferred/destination, retryable/file)", problems.isEmpty,
                   problems.isEmpty ? nil : problems.joined(separator: "; "))
    }

    /// An op it does not know gets an error, not silence or a crash.
    func unknownOp(_ run: CheckRun) async {
        let name = "an unknown op is answered with an error"
        guard let current = await run.session() else {
            run.record(name, false, "the plugin could not be started again")
            return
        }
        do {
            _ = try await current.request("syncgate-check-unknown-op", [:], what: "an unknown op", idleLimit: spec.answerTimeout)
            run.record(name, false, "it answered ok")
        } catch is PluginErrorBody {
            run.record(name, true)
        } catch {
            run.record(name, false, "\(error)")
        }
    }

    /// It exits when its stdin closes.
    func exitsOnEOF(_ run: CheckRun) async {
        let name = "exits within 3 s once its stdin closes"
        guard let current = await run.session() else {
            run.record(name, false, "the plugin could not be started again")
            return
        }
        current.closeInput()
        let deadline = ContinuousClock.now + .seconds(3)
        while !current.isEnded && ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        run.record(name, current.isEnded, current.isEnded ? nil : "still running 3 s after its stdin closed (killed now)")
    }
}
