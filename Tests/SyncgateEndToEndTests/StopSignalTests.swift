import Foundation
import Synchronization
import SyncgateTestSupport
import Testing

/// What stops a one-shot `syncgate sync` early, with the real binary and a local destination slowed by its
/// `bandwidth`: SIGHUP drains it exactly as SIGTERM does (exit 130, no row left `uploading`, the next run finishes
/// without sending a file twice), and a state file deleted mid-run stops new uploads at once with one error line.
@Suite("stop signals and a lost state file (real binary)")
struct StopSignalTests {
    static let files = 400

    /// A source of `files` files of 16 KiB and a local destination sending 256 KiB/s (about 16 files a second), or
    /// as fast as it can.
    func setUp(_ dir: TemporaryDirectory, slow: Bool = true) throws {
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: archive, type: local, path: synced, concurrency: 2\(slow ? ", bandwidth: 256KiB" : "")}]
            """)
        guard slow else { return }
        for i in 0..<Self.files { try dir.write(String(format: "outbox/f%04d.bin", i), Data(repeating: UInt8(i % 251), count: 16 * 1024)) }
    }

    /// Starts `sync --json` with its events and standard error in files of the test's folder.
    func startSync(_ dir: TemporaryDirectory) throws -> (ChildProcess, URL, URL) {
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

    static func count(_ event: String, in file: URL) -> Int {
        ((try? String(contentsOf: file, encoding: .utf8)) ?? "").components(separatedBy: "\"event\":\"\(event)\"").count - 1
    }

    /// Signals a sync once 5 files are delivered; returns its exit status and the statuses of its rows after.
    func interrupted(by signal: Int32) async throws -> (status: Int32, rows: [String], next: ProcessResult) {
        let dir = try TemporaryDirectory("sg-signal")
        defer { dir.remove() }
        let cli = SyncgateCLI(dir: dir)
        try setUp(dir)
        let (process, out, _) = try startSync(dir)
        let pid = process.processIdentifier
        let midway = await ProcessRunner.when(process, timeout: 120, { Self.count("synced", in: out) >= 5 }, then: { kill(pid, signal) })
        #expect(midway, "the run ended before it could be signalled")
        #expect(await ProcessRunner.waitForExit(process, timeout: 60), "signal \(signal) did not end the run")
        let status = try await #require(SyncgateCLI.json(try cli.run(["status", "--json"]).stdout))
        let rows = ((status["files"] as? [[String: Any]]) ?? []).compactMap { $0["status"] as? String }
        try setUp(dir, slow: false)
        let next = try await cli.run(["sync", "--json"])
        return (process.terminationReason == .uncaughtSignal ? -process.terminationStatus : process.terminationStatus, rows, next)
    }

    @Test func sighupDrainsAOneShotSyncAsSigtermDoes() async throws {
        for signal in [SIGTERM, SIGHUP] {
            let (status, rows, next) = try await interrupted(by: signal)
            #expect(status == 130, "signal \(signal): exit \(status) (negative: killed by that signal)")
            #expect(!rows.contains("uploading") && !rows.contains("failed"), "signal \(signal): \(Set(rows))")
            // The next run sends each file that was not delivered, and none twice.
            #expect(next.status == 0, "signal \(signal): \(next.stderr)")
            let summary = try #require(SyncgateCLI.events(next.stdout).last)
            let uploaded = summary["uploaded"] as? Int ?? -1, upToDate = summary["up_to_date"] as? Int ?? -1
            #expect(uploaded + upToDate == Self.files && uploaded < Self.files, "signal \(signal): \(summary)")
        }
    }

    @Test func aStateFileDeletedMidRunStopsNewUploadsAtOnceWithOneError() async throws {
        let dir = try TemporaryDirectory("sg-lost-state")
        defer { dir.remove() }
        try setUp(dir)
        let (process, out, errors) = try startSync(dir)
        let state = dir.file(".syncgate/state.sqlite").path
        let startedBefore = Mutex(0)
        let deleted = await ProcessRunner.when(process, timeout: 120, { Self.count("synced", in: out) >= 10 }, then: {
            startedBefore.withLock { $0 = Self.count("started", in: out) }
            unlink(state)
            unlink(state + "-wal")
            unlink(state + "-shm")
        })
        #expect(deleted, "the sync ended before the state file could be deleted")
        #expect(await ProcessRunner.waitForExit(process, timeout: 120))
        let stderr = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 78, "exit \(process.terminationStatus): \(stderr)")
        let lines = stderr.split(separator: "\n")
        #expect(lines.filter { $0.contains("was deleted while syncgate was using it") }.count == 1, "\(stderr)")
        #expect(!lines.contains { $0.contains("cannot write the state ledger") }, "\(stderr)")
        // The loss is noticed at the next ledger write (about a second), in-flight uploads get their grace (2 s):
        // a few dozen starts at most at 16 files a second, where going on for 10 s started some 160.
        let startedAfter = Self.count("started", in: out) - startedBefore.withLock { $0 }
        #expect(startedAfter < 80, "\(startedAfter) uploads started after the state file was deleted")
        #expect(Self.count("started", in: out) < Self.files)
    }
}
