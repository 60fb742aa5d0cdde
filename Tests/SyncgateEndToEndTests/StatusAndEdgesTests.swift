import Foundation
import SyncgateTestSupport
import Testing

/// What a new user meets around `status` and `sync` with a local destination: status before any run, chosen
/// paths, every row streamed, `--check` for monitoring, a missing source, a reader that closes the pipe early, and
/// a state file deleted under a running sync.
@Suite("status and edges (real binary, local destination)")
struct StatusAndEdgesTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-edges")
        cli = SyncgateCLI(dir: dir)
    }

    func config(sources: String = "[{name: outbox, path: outbox}]", fsync: String = "false", rate: Int? = nil) throws {
        let limit = rate.map { ", rate: {requests_per_second: \($0)}" } ?? ""
        try dir.write("plugins.yaml", """
            version: 1
            sources: \(sources)
            destinations: [{name: archive, type: local, path: synced, fsync: \(fsync)\(limit)}]
            """)
    }

    /// Whether the running sync has recorded at least 100 files as synced in its ledger at `state` (read by sqlite3
    /// beside it). The `synced` events come before their batch's ledger write, so 100 events alone may come before
    /// anything is recorded (a loaded machine widens that gap): the ledger itself is asked, once the events say so.
    static func recorded(_ events: URL, _ state: String) -> Bool {
        let text = (try? String(contentsOf: events, encoding: .utf8)) ?? ""
        guard text.components(separatedBy: "\"event\":\"synced\"").count > 100 else { return false }
        guard let rows = try? ProcessRunner.runBlocking(URL(fileURLWithPath: "/usr/bin/sqlite3"),
                                                         ["-readonly", state, "SELECT COUNT(*) FROM files WHERE status = 'synced'"], timeout: 10)
        else { return false }
        return (Int(rows.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 100
    }

    /// Starts `sync --json` with its events and its standard error in files of the test's folder.
    func startSync() throws -> (ChildProcess, URL, URL) {
        let out = dir.file("events.jsonl")
        let errors = dir.file("stderr.txt")
        for file in [out, errors] { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
        let process = ChildProcess()
        process.executableURL = SyncgateCLI.binary
        process.arguments = ["sync", "--json"]
        process.currentDirectoryURL = dir.url
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: errors)
        try process.run()
        return (process, out, errors)
    }

    @Test func statusBeforeAnyRunSaysSoThenShowsChosenPathsAndStreamsEveryRow() async throws {
        defer { dir.remove() }
        try config()
        try dir.write("outbox/a.txt", "a")
        try dir.write("outbox/sub/b.txt", "b")
        var status = try await cli.run(["status"])
        #expect(status.status == 0)
        #expect(status.stdout.contains("No sync has run"), "\(status.stdout)")
        #expect(!status.stdout.contains("Every routed file is synced"))
        let json = try #require(SyncgateCLI.json(try await cli.run(["status", "--json"]).stdout))
        #expect(json["last_run"] is NSNull)
        // A look creates nothing: no state folder, no state file (it answered from an empty ledger of its own).
        #expect(!FileManager.default.fileExists(atPath: dir.file(".syncgate").path), "status created the state's folder")
        let check = try await cli.run(["check"])
        #expect(check.status == 0 && check.stdout.contains("0 checked"), "\(check.stdout)\(check.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file(".syncgate").path), "check created the state's folder")

        #expect(try await cli.run(["sync"]).status == 0)
        status = try await cli.run(["status"])
        #expect(status.stdout.contains("Every routed file is synced"), "\(status.stdout)")
        // Chosen paths, synced ones included: relative to the source, or a path of the file itself.
        status = try await cli.run(["status", "--json", "sub/b.txt", dir.file("outbox/a.txt").path])
        let files = try #require(SyncgateCLI.json(status.stdout)?["files"] as? [[String: Any]])
        #expect(Set(files.compactMap { $0["path"] as? String }) == ["a.txt", "sub/b.txt"])
        #expect(files.allSatisfy { $0["status"] as? String == "synced" })
        // Every row, one JSON object per line.
        let all = try await cli.run(["status", "--all", "--json"])
        #expect(all.status == 0)
        let lines = all.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { SyncgateCLI.json(String($0))?["status"] as? String == "synced" })
        #expect(try await cli.run(["status", "--check"]).status == 0)
    }

    @Test func checkFailsWhenAFileFailed() async throws {
        defer { dir.remove() }
        try config()
        try dir.write("outbox/a.txt", "a")
        // A folder where the file should go: the local destination cannot replace it (a file-scoped failure).
        try FileManager.default.createDirectory(at: dir.file("synced/a.txt/inside"), withIntermediateDirectories: true)
        let sync = try await cli.run(["sync"])
        #expect(sync.status != 0)
        let check = try await cli.run(["status", "--check"])
        #expect(check.status == 1, "\(check.stdout)")
    }

    @Test func aMissingSourceFailsLoudlyUnlessItIsOptional() async throws {
        defer { dir.remove() }
        try config(sources: "[{name: outbox, path: outbox}, {name: card, path: card}]")
        try dir.write("outbox/a.txt", "a")
        var result = try await cli.run(["sync"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("source card"), "\(result.stderr)")
        #expect(result.stderr.contains("does not exist"), "\(result.stderr)")
        #expect(try dir.read("synced/a.txt") == Data("a".utf8), "the other source still syncs")
        try config(sources: "[{name: outbox, path: outbox}, {name: card, path: card, optional: true}]")
        result = try await cli.run(["sync"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try await cli.run(["validate"]).status == 0)
    }

    @Test func aReaderThatClosesThePipeEndsTheCommandQuietly() async throws {
        defer { dir.remove() }
        try config()
        for i in 0..<300 { try dir.write("outbox/f\(i).txt", "file \(i)") }
        let bash = URL(fileURLWithPath: "/bin/bash")
        let binary = SyncgateCLI.binary.path
        let sync = try await ProcessRunner.run(bash, ["-c", "'\(binary)' sync --json | head -1; echo \"exit=${PIPESTATUS[0]}\""],
                                               currentDirectory: dir.url)
        #expect(sync.stdout.hasSuffix("exit=141\n") || sync.stdout.hasSuffix("exit=0\n"), "\(sync.stdout.suffix(200))")
        #expect(!sync.stderr.contains("Fatal error") && !sync.stderr.contains("Stack dump"), "\(sync.stderr)")
        let status = try await ProcessRunner.run(bash, ["-c", "'\(binary)' status | head -1; echo \"exit=${PIPESTATUS[0]}\""],
                                                 currentDirectory: dir.url)
        #expect(status.stdout.hasPrefix("DESTINATION"), "\(status.stdout)")
        #expect(status.stdout.hasSuffix("exit=141\n") || status.stdout.hasSuffix("exit=0\n"), "\(status.stdout)")
        #expect(status.stderr.isEmpty, "\(status.stderr)")
        // The interrupted sync left a consistent ledger: the next one finishes the job.
        #expect(try await cli.run(["sync"]).status == 0)
        #expect(try await cli.run(["sync", "--json"]).stdout.contains("\"uploaded\":0"))
    }

    @Test func aStateFileDeletedDuringASyncIsNoticedAndWhatWasRecordedIsKept() async throws {
        defer { dir.remove() }
        // 600 files at 200 uploads a second: the sync still runs (for 3 s at least, however loaded the machine) when its
        // ledger holds 100 synced files.
        try config(fsync: "file", rate: 200)
        for i in 0..<600 { try dir.write(String(format: "outbox/f%04d.txt", i), String(repeating: "x", count: 100 + i % 50)) }
        let (process, out, errors) = try startSync()
        let state = dir.file(".syncgate/state.sqlite").path
        let deleted = await ProcessRunner.when(process, timeout: 60, {
            Self.recorded(out, state)
        }, then: {
            unlink(state)
            unlink(state + "-wal")
            unlink(state + "-shm")
        })
        #expect(deleted, "the sync ended before it could be interrupted")
        await ProcessRunner.waitForExit(process, timeout: 60)
        let stderr = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 78, "exit \(process.terminationStatus): \(stderr)")
        #expect(stderr.contains("was deleted while syncgate was using it"), "\(stderr)")
        // What the run had recorded is back at its path: the next run does not send those files again.
        #expect(FileManager.default.fileExists(atPath: state))
        let next = try await cli.run(["sync", "--json"])
        #expect(next.status == 0, "\(next.stderr)")
        let summary = try #require(SyncgateCLI.events(next.stdout).last)
        #expect((summary["uploaded"] as? Int ?? 600) <= 600 - 100, "\(summary)")
    }

    @Test func aStateFileReplacedDuringASyncIsLeftAloneAndWhatWasRecordedIsSavedBesideIt() async throws {
        defer { dir.remove() }
        try config(fsync: "file", rate: 200)  // as above
        for i in 0..<600 { try dir.write(String(format: "outbox/f%04d.txt", i), String(repeating: "y", count: 100 + i % 50)) }
        let (process, out, errors) = try startSync()
        let state = dir.file(".syncgate/state.sqlite").path
        let other = Data("someone else's file\n".utf8)
        let replaced = await ProcessRunner.when(process, timeout: 60, {
            Self.recorded(out, state)
        }, then: {
            // Another program puts its own file at the path (a restore from an old backup, say).
            let temporary = state + ".other"
            _ = FileManager.default.createFile(atPath: temporary, contents: other)
            rename(temporary, state)
        })
        #expect(replaced, "the sync ended before the file could be replaced")
        await ProcessRunner.waitForExit(process, timeout: 60)
        let stderr = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 78, "exit \(process.terminationStatus): \(stderr)")
        #expect(stderr.contains("was replaced by another file"), "\(stderr)")
        // The other program's file is left as it is; this run's record is beside it.
        #expect(try Data(contentsOf: URL(fileURLWithPath: state)) == other)
        let saved = try FileManager.default.contentsOfDirectory(atPath: dir.file(".syncgate").path).filter { $0.hasPrefix("state.sqlite.recovered-") }
        #expect(saved.count == 1, "\(saved)")
        if let name = saved.first {
            let rows = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/sqlite3"),
                                                   [dir.file(".syncgate/" + name).path, "SELECT COUNT(*) FROM files WHERE status = 'synced'"])
            #expect((Int(rows.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 100, "\(rows.stdout) \(rows.stderr)")
        }
    }
}
