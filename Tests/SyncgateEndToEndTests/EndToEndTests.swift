import Foundation
import Synchronization
import SyncgateTestSupport
import Testing

/// The built `syncgate` binary on temporary folders, local destination.
@Suite("syncgate binary end to end (local destination)")
struct EndToEndTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-e2e")
        cli = SyncgateCLI(dir: dir)
    }

    func writeConfig(concurrency: Int = 4, extra: String = "") throws {
        try dir.write("plugins.yaml", """
            version: 1
            state: .syncgate/state.sqlite
            sources:
              - name: outbox
                path: outbox
                exclude: ["**/.*"]
            destinations:
              - name: archive
                type: local
                path: synced
                concurrency: \(concurrency)
                retry: { file: 1, artwork: 1, base_delay: 10ms, max_delay: 50ms }
            \(extra)
            routes:
              - match: ["**/*"]
                to: [archive]
            """)
    }

    func summary(_ result: ProcessResult) -> [String: Any]? {
        SyncgateCLI.events(result.stdout).last { $0["event"] as? String == "summary" }
    }

    @Test func firstSyncDeliversAllSecondUploadsNothingChangedIsResent() async throws {
        defer { dir.remove() }
        try writeConfig()
        try dir.write("outbox/a.txt", "alpha")
        try dir.write("outbox/art/cover.png", Data([0x89, 0x50, 0x4E, 0x47, 1, 2, 3]))
        try dir.write("outbox/deep/x/y/z.json", "{\"k\": 1}")
        try dir.write("outbox/.hidden", "secret-ish")

        var result = try await cli.run(["sync", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(summary(result)?["uploaded"] as? Int == 3)
        #expect(try dir.read("synced/art/cover.png") == Data([0x89, 0x50, 0x4E, 0x47, 1, 2, 3]))
        #expect(try dir.read("synced/deep/x/y/z.json") == Data("{\"k\": 1}".utf8))
        #expect(!dir.exists("synced/.hidden"))
        let kinds = SyncgateCLI.events(result.stdout).compactMap { $0["event"] as? String }
        #expect(kinds.filter { $0 == "queued" }.count == 3)
        #expect(kinds.filter { $0 == "started" }.count == 3)
        #expect(kinds.filter { $0 == "synced" }.count == 3)

        result = try await cli.run(["sync", "--json"])
        #expect(result.status == 0)
        #expect(summary(result)?["uploaded"] as? Int == 0)
        #expect(summary(result)?["up_to_date"] as? Int == 3)
        #expect(!SyncgateCLI.events(result.stdout).contains { $0["event"] as? String == "started" })

        try dir.write("outbox/a.txt", "alpha, version two")
        result = try await cli.run(["sync", "--json"])
        #expect(summary(result)?["uploaded"] as? Int == 1)
        let queued = SyncgateCLI.events(result.stdout).first { $0["event"] as? String == "queued" }
        #expect(queued?["path"] as? String == "a.txt")
        #expect(queued?["reason"] as? String == "changed")
        #expect(try dir.read("synced/a.txt") == Data("alpha, version two".utf8))

        let status = try await cli.run(["status", "--json"])
        #expect(status.status == 0)
        let report = try #require(SyncgateCLI.json(status.stdout))
        let destinations = try #require(report["destinations"] as? [[String: Any]])
        #expect(destinations.first?["name"] as? String == "archive")
        #expect(destinations.first?["type"] as? String == "local")
        #expect(destinations.first?["synced"] as? Int == 3)
        #expect(destinations.first?["pending"] as? Int == 0)
        #expect(destinations.first?["failed"] as? Int == 0)
        #expect((report["files"] as? [Any])?.isEmpty == true)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs setpriv to drop root"))
    func unreadableFileFailsAloneWhileTheRestSync() async throws {
        defer { dir.remove() }
        // Recent failures listed for an hour: a loaded machine can take longer than the default minute to get to
        // the `status` below.
        try writeConfig(extra: "defaults: {recent: {completed: 1h, failed: 1h}}")
        try dir.write("outbox/ok-1.txt", "one")
        try dir.write("outbox/locked.txt", "locked")
        try dir.write("outbox/ok-2.txt", "two")
        chmod(dir.file("outbox/locked.txt").path, 0o000)
        // As root every file is readable: run as an unprivileged user then.
        let user: String? = geteuid() == 0 ? "65534" : nil
        if user != nil {
            chmod(dir.path, 0o777)
            chmod(dir.file("outbox").path, 0o777)
            chmod(dir.file("plugins.yaml").path, 0o644)
            chmod(dir.file("outbox/ok-1.txt").path, 0o644)
            chmod(dir.file("outbox/ok-2.txt").path, 0o644)
        }
        let result = try await cli.run(["sync", "--json"], asUser: user)
        #expect(result.status == 75, "retryable failure scheduled: \(result.stderr)")
        #expect(try dir.read("synced/ok-1.txt") == Data("one".utf8))
        #expect(try dir.read("synced/ok-2.txt") == Data("two".utf8))
        #expect(!dir.exists("synced/locked.txt"))
        let failed = SyncgateCLI.events(result.stdout).first { $0["event"] as? String == "failed" }
        #expect(failed?["path"] as? String == "locked.txt")
        #expect((failed?["error"] as? String)?.contains("Permission denied") == true)

        let status = try await cli.run(["status", "--json", "--failed"], asUser: user)
        let files = try #require(SyncgateCLI.json(status.stdout)?["files"] as? [[String: Any]])
        #expect(files.count == 1)
        #expect(files.first?["path"] as? String == "locked.txt")
        #expect(files.first?["status"] as? String == "failed")
        #expect((files.first?["last_error"] as? String)?.contains("Permission denied") == true)
        #expect(files.first?["attempts"] != nil)
        #expect(files.first?["last_attempt_at"] != nil)

        // It failed before any attempt (the planning could not open it): the report's recent failures say when.
        let plain = try await cli.run(["status"], asUser: user)
        let recent = plain.stdout.components(separatedBy: "Recently failed (1):\n").last ?? ""
        #expect(recent.hasPrefix("  archive  locked.txt  20"), "\(plain.stdout)")
    }

    @Test func killedRunResumesWithNothingLostOrLeftBehind() async throws {
        defer { dir.remove() }
        try writeConfig(concurrency: 1)
        var expected: [String: Data] = [:]
        for i in 0..<400 {
            let data = Data((0..<(64 * 1024)).map { UInt8(($0 &* 7 &+ i) % 256) })
            let path = "f\(i / 40)/file-\(i).bin"
            try dir.write("outbox/" + path, data)
            expected[path] = data
        }
        // Kill -9 at several moments (just after start, at the first delivered file, 40 files later), then let a
        // run finish. The moments follow the run's progress, not the clock, so a loaded machine cannot turn them
        // into "after the run ended".
        var cutMidDelivery = 0
        let synced = dir.file("synced").path
        for stage in 0..<3 {
            let before = Self.delivered(synced)
            let process = try cli.start(["sync"])
            let pid = process.processIdentifier
            let started = Date()
            let reached = await ProcessRunner.when(process) {
                stage == 0 ? Date().timeIntervalSince(started) > 0.02 : Self.delivered(synced) >= before + (stage == 1 ? 1 : 40)
            } then: {
                kill(pid, SIGKILL)
            }
            if !reached { kill(pid, SIGKILL) }
            await ProcessRunner.waitForExit(process)
            if reached, process.terminationReason == .uncaughtSignal, stage > 0, Self.delivered(synced) < 400 { cutMidDelivery += 1 }
        }
        #expect(cutMidDelivery >= 1, "no run was cut off mid-delivery, so this test means nothing")
        let result = try await cli.run(["sync", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        for (path, data) in expected {
            #expect(try dir.read("synced/" + path) == data, "\(path)")
        }
        let leftovers = FileManager.default.enumerator(atPath: dir.file("synced").path)?.compactMap { $0 as? String }.filter { $0.contains(".syncgate-tmp-") } ?? []
        #expect(leftovers.isEmpty, "temporary files left: \(leftovers.prefix(3))")
        let status = try await #require(SyncgateCLI.json(try cli.run(["status", "--json"]).stdout))
        let line = try #require((status["destinations"] as? [[String: Any]])?.first)
        #expect(line["synced"] as? Int == 400)
        #expect(line["pending"] as? Int == 0)
    }

    @Test func ctrlCExits130AndTheNextRunFinishes() async throws {
        defer { dir.remove() }
        try writeConfig(concurrency: 1)
        for i in 0..<600 { try dir.write("outbox/file-\(i).bin", Data(repeating: UInt8(i % 256), count: 128 * 1024)) }
        let destination = dir.file("synced").path
        let process = try cli.start(["sync"])
        let pid = process.processIdentifier
        // Interrupted once files are arriving (the moment follows progress, not the clock).
        let sentAt = Mutex<Date?>(nil)
        let midway = await ProcessRunner.when(process) { Self.delivered(destination) >= 5 } then: {
            sentAt.withLock { $0 = Date() }
            kill(pid, SIGINT)
        }
        #expect(midway, "the run ended before it could be interrupted")
        await ProcessRunner.waitForExit(process, timeout: 60)
        #expect(process.terminationStatus == 130)
        // From the signal to the exit, both timed on threads of their own (not by this task, which a loaded machine
        // can hold back for seconds); the CLI promises 3 s.
        let sent = try #require(sentAt.withLock { $0 })
        let took = try #require(process.endedAt).timeIntervalSince(sent)
        #expect(took < 5, "exit took \(took) s")
        let status = try await #require(SyncgateCLI.json(try cli.run(["status", "--json"]).stdout))
        let files = (status["files"] as? [[String: Any]]) ?? []
        #expect(!files.contains { $0["status"] as? String == "uploading" || $0["status"] as? String == "failed" })
        let result = try await cli.run(["sync", "--json"])
        #expect(result.status == 0)
        let synced = (summary(result)?["uploaded"] as? Int ?? 0) + (summary(result)?["up_to_date"] as? Int ?? 0)
        #expect(synced == 600)
    }

    @Test func configErrorsExit78WithFileLineColumnAndKey() async throws {
        defer { dir.remove() }
        try writeConfig()
        var text = try String(contentsOf: dir.file("plugins.yaml"), encoding: .utf8)
        text = text.replacingOccurrences(of: "retry: { file: 1,", with: "retry: { file: -2,")
        try dir.write("plugins.yaml", text)
        let result = try await cli.run(["sync"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("plugins.yaml:12:20: destinations[0].retry.file: must be >= 0"), "\(result.stderr)")
        let missing = try await cli.run(["sync", "--config", "nope.yaml"])
        #expect(missing.status == 78)
        #expect(missing.stderr.contains("nope.yaml: no such file"))
    }

    @Test func usageErrorsExit64() async throws {
        defer { dir.remove() }
        try writeConfig()
        #expect(try await cli.run(["sync", "--no-such-flag"]).status == 64)
        #expect(try await cli.run(["sync", "--destination", "nowhere"]).status == 64)
    }

    @Test func dryRunPrintsThePlanAndChangesNothing() async throws {
        defer { dir.remove() }
        try writeConfig()
        try dir.write("outbox/a.txt", "a")
        let result = try await cli.run(["sync", "--dry-run"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("upload  archive  a.txt  (new)"))
        #expect(!dir.exists("synced"))
        #expect(!dir.exists(".syncgate/state.sqlite"))
    }

    @Test func aSecondSyncWhileOneRunsIsRefusedClearly() async throws {
        defer { dir.remove() }
        try writeConfig(concurrency: 1)
        for i in 0..<400 { try dir.write("outbox/file-\(i).bin", Data(repeating: 1, count: 128 * 1024)) }
        let first = try cli.start(["sync"])
        defer {
            kill(first.processIdentifier, SIGKILL)
            first.waitUntilExit()
        }
        // Once the first run is delivering (it holds the lock), it is paused with SIGSTOP, so the second run
        // meets it mid-way however slow the machine is; then it is let go and must finish normally.
        let synced = dir.file("synced").path
        let pid = first.processIdentifier
        let paused = await ProcessRunner.when(first) { Self.delivered(synced) >= 1 } then: { kill(pid, SIGSTOP) }
        #expect(paused, "the first run ended before the second could meet it")
        let second = try await cli.run(["sync"])
        kill(first.processIdentifier, SIGCONT)
        #expect(second.status == 75)
        #expect(second.stderr.contains("another syncgate"))
        #expect(await ProcessRunner.waitForExit(first, timeout: 120))
        #expect(first.terminationStatus == 0)
        #expect(Self.delivered(dir.file("synced").path) == 400)
    }

    /// Delivered files (not temporaries) in a destination folder.
    static func delivered(_ folder: String) -> Int {
        FileManager.default.enumerator(atPath: folder)?
            .compactMap { $0 as? String }.filter { $0.hasSuffix(".bin") && !$0.contains(".syncgate-tmp-") }.count ?? 0
    }

    @Test func lsRmAndPrometheus() async throws {
        defer { dir.remove() }
        try writeConfig()
        try dir.write("outbox/a.txt", "a")
        try dir.write("outbox/b/c.txt", "c")
        #expect(try await cli.run(["sync"]).status == 0)
        let ls = try await cli.run(["ls", "--destination", "archive", "--json"])
        let names = (SyncgateCLI.json(ls.stdout)?["files"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
        #expect(names == ["a.txt", "b/c.txt"])

        let rm = try await cli.run(["rm", "--destination", "archive", "--json", "b/c.txt", "missing.txt"])
        #expect(rm.status == 1)
        let results = try #require(SyncgateCLI.json(rm.stdout)?["results"] as? [[String: Any]])
        #expect(results.first { $0["name"] as? String == "b/c.txt" }?["deleted"] as? Bool == true)
        #expect(results.first { $0["name"] as? String == "missing.txt" }?["deleted"] as? Bool == false)
        #expect(!dir.exists("synced/b/c.txt"))
        // Still in the source, so the next sync sends it again.
        let again = try await cli.run(["sync", "--json"])
        #expect(summary(again)?["uploaded"] as? Int == 1)
        #expect(dir.exists("synced/b/c.txt"))

        let prom = try await cli.run(["status", "--prometheus", dir.file("syncgate.prom").path])
        #expect(prom.status == 0)
        let text = try String(contentsOf: dir.file("syncgate.prom"), encoding: .utf8)
        #expect(text.contains("syncgate_files{destination=\"archive\",type=\"local\",status=\"synced\"} 2"))
        // Written again (as cron does every minute): replaced whole, no temporary file left beside it.
        try dir.write("outbox/d.txt", "delta")
        #expect(try await cli.run(["sync"]).status == 0)
        let rewritten = try await cli.run(["status", "--prometheus", dir.file("syncgate.prom").path])
        #expect(rewritten.status == 0, "\(rewritten.stderr)")
        let updated = try String(contentsOf: dir.file("syncgate.prom"), encoding: .utf8)
        #expect(updated.contains("syncgate_files{destination=\"archive\",type=\"local\",status=\"synced\"} 3"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.contains(".prom.") }.isEmpty)
    }

    @Test func permanentFailureThenRetryAndForget() async throws {
        defer { dir.remove() }
        try writeConfig()
        try dir.write("outbox/ok.txt", "fine")
        try dir.write("outbox/sub/x.txt", "blocked")
        try dir.write("outbox/other/y.txt", "blocked too")
        // A plain file where the destination needs folders: writing under it fails permanently (not a directory).
        try dir.write("synced/sub", "in the way")
        try dir.write("synced/other", "in the way")
        var result = try await cli.run(["sync", "--json"])
        #expect(result.status == 1, "\(result.stderr)")
        let failed = SyncgateCLI.events(result.stdout).filter { $0["event"] as? String == "failed" }
        #expect(Set(failed.compactMap { $0["path"] as? String }) == ["sub/x.txt", "other/y.txt"])
        #expect(failed.allSatisfy { $0["class"] as? String == "permanent" })
        #expect(failed.allSatisfy { $0["attempts"] as? Int == 1 })

        // Not retried automatically.
        result = try await cli.run(["sync", "--json"])
        #expect(result.status == 1)
        #expect(!SyncgateCLI.events(result.stdout).contains { $0["event"] as? String == "started" })

        // Fixed: `retry` re-attempts now, only the named file.
        try FileManager.default.removeItem(at: dir.file("synced/sub"))
        result = try await cli.run(["retry", "--json", "sub/x.txt"])
        #expect(result.status == 1, "other/y.txt still fails")
        #expect(try dir.read("synced/sub/x.txt") == Data("blocked".utf8))
        let started = SyncgateCLI.events(result.stdout).filter { $0["event"] as? String == "started" }.compactMap { $0["path"] as? String }
        #expect(started == ["sub/x.txt"])
        // A path with nothing failed is named, with what it is, rather than counted as nothing.
        result = try await cli.run(["retry", "ok.txt", "nosuch.txt"])
        #expect(result.stderr.contains("syncgate: ok.txt: nothing failed to retry there (synced at archive)"), "\(result.stderr)")
        #expect(result.stderr.contains("syncgate: nosuch.txt: nothing failed to retry there (not in the ledger)"), "\(result.stderr)")

        // forget drops the failed entry: the file is new to the next run.
        result = try await cli.run(["forget", "other/y.txt"])
        #expect(result.stdout.contains("forgot 1 failed entry"))
        let status = try await #require(SyncgateCLI.json(try cli.run(["status", "--json"]).stdout))
        #expect((status["files"] as? [Any])?.isEmpty == true)
        try FileManager.default.removeItem(at: dir.file("synced/other"))
        result = try await cli.run(["sync", "--json"])
        #expect(result.status == 0)
        #expect(try dir.read("synced/other/y.txt") == Data("blocked too".utf8))
    }

    @Test func validatePrintsThePlan() async throws {
        defer { dir.remove() }
        try writeConfig()
        // A source folder that is not there is a config error, located at its `path`.
        var result = try await cli.run(["validate"])
        #expect(result.status == 78, "\(result.stderr)")
        #expect(result.stderr.contains("plugins.yaml:"), "\(result.stderr)")
        #expect(result.stderr.contains("sources[0].path: the folder"), "\(result.stderr)")
        try FileManager.default.createDirectory(at: dir.file("outbox"), withIntermediateDirectories: true)
        result = try await cli.run(["validate"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("archive (local)"))
        #expect(result.stdout.contains("retries file 1 / artwork 1"))
        // --quiet (the units' ExecStartPre): nothing on success, the exit status says it; errors still on stderr.
        result = try await cli.run(["validate", "--quiet"])
        #expect(result.status == 0 && result.stdout.isEmpty && result.stderr.isEmpty, "\(result.stdout)\(result.stderr)")
        try FileManager.default.removeItem(at: dir.file("outbox"))
        result = try await cli.run(["validate", "--quiet"])
        #expect(result.status == 78 && result.stderr.contains("sources[0].path: the folder"), "\(result.stderr)")
    }
}
