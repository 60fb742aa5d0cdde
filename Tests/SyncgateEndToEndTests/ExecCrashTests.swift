import Foundation
import SyncgateTestSupport
import Testing

/// `kill -9` of syncgate, and of its plugin, at random moments of syncs through an external plugin (a first sync of
/// 1,000 files, then runs each with a tenth of them changed); then syncs until done and checks that every file is delivered with its content, that the ledger agrees (all synced, nothing
/// pending or failed), that nothing else was left in the destination, and that one more sync sends nothing.
@Suite("external plugins: kill -9 at random moments", .serialized)
struct ExecCrashTests {
    static var kills: Int { Int(ProcessInfo.processInfo.environment["SYNCGATE_CRASH_KILLS"] ?? "") ?? 8 }
    static let count = 1000

    /// The pids of `parent`'s children (from /proc).
    static func children(of parent: Int32) -> [Int32] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { Int32($0) }.filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            return fields.count > 1 && Int32(fields[1]) == parent
        }
    }

    @Test func killNineOfSyncgateOrThePluginLosesAndDuplicatesNothing() async throws {
        let dir = try TemporaryDirectory("sg-exec-crash")
        defer { dir.remove() }
        let cli = SyncgateCLI(dir: dir)
        var expected: [String: Data] = [:]
        func write(_ i: Int, version: Int) throws {
            let name = "f\(i % 10)/file \(i).bin"
            let data = Data(repeating: UInt8((i + version * 7) % 251), count: 2_000 + i * 37 + version)
            try dir.write("outbox/" + name, data)
            expected[name] = data
        }
        for i in 0..<Self.count { try write(i, version: 0) }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: copies
                type: exec
                command: ["\(ExecPluginTests.testPlugin)"]
                concurrency: 4
                retry: {file: 3, base_delay: 10ms, max_delay: 50ms}
                settings: {path: out}
            """)
        var generator = SplitMix(seed: UInt64(Date().timeIntervalSince1970))
        var moments: [String] = []
        var cutShort = 0
        for round in 0..<Self.kills {
            // Every run has work: after the first, a tenth of the files change before it.
            if round > 0 { for _ in 0..<(Self.count / 10) { try write(Int(generator.next() % UInt64(Self.count)), version: round) } }
            let process = try cli.start(["sync"])
            let delay = 20 + Int(generator.next() % (round == 0 ? 1000 : 250))
            try await Task.sleep(for: .milliseconds(delay))
            if round % 2 == 1, let plugin = Self.children(of: process.processIdentifier).first {
                // The plugin dies mid-run: syncgate goes on (the files it held fail retryably or wait) and ends.
                kill(plugin, SIGKILL)
                moments.append("plugin@\(delay)ms")
                let ended = await ProcessRunner.waitForExit(process, timeout: 60)
                if !ended { kill(process.processIdentifier, SIGKILL); await ProcessRunner.waitForExit(process) }
                #expect(ended, "syncgate did not end after its plugin was killed")
            } else {
                kill(process.processIdentifier, SIGKILL)
                moments.append("syncgate@\(delay)ms")
                await ProcessRunner.waitForExit(process)
                if process.terminationReason == .uncaughtSignal { cutShort += 1 }
            }
        }
        #expect(cutShort >= 1, "no run was cut short (\(moments))")
        // Until done (a plugin killed mid-run may have left files failed and scheduled: `retry` sends them now).
        var final = try await cli.run(["sync"])
        for _ in 0..<3 where final.status != 0 { final = try await cli.run(["retry"]) }
        #expect(final.status == 0, "after \(moments): \(final.stderr.suffix(2000))")
        var problems: [String] = []
        for (name, data) in expected where (try? dir.read("out/" + name)) != data { problems.append(name) }
        #expect(problems.isEmpty, "after \(moments): \(problems.prefix(10))")
        let held = FileManager.default.enumerator(atPath: dir.file("out").path)?.compactMap { $0 as? String }
            .filter { $0.hasSuffix(".bin") || $0.contains(".tmp-") } ?? []
        #expect(held.count == Self.count, "the destination holds exactly the files, nothing left over: \(held.count) \(held.filter { $0.contains(".tmp-") }.prefix(5))")
        let status = SyncgateCLI.json(try await cli.run(["status", "--json"]).stdout)
        let line = (status?["destinations"] as? [[String: Any]])?.first ?? [:]
        #expect(line["synced"] as? Int == Self.count && line["pending"] as? Int == 0 && line["failed"] as? Int == 0 && line["uploading"] as? Int == 0, "\(line)")
        let again = try await cli.run(["sync", "--json"])
        #expect(SyncgateCLI.events(again.stdout).filter { $0["event"] as? String == "started" }.isEmpty, "a further sync sends nothing")
    }

    /// A plugin that crashes every 200 files is started again and its uploads in flight are retried: one run
    /// delivers every file (a crash is four failures at once, not a destination that is away). Run with the test
    /// plugin speaking batches (a crash then cuts a batch short: its answers written so far count, the rest fail)
    /// and line by line (`--unbatched`).
    @Test(arguments: [false, true])
    func aPluginThatCrashesEvery200FilesDeliversEverythingInOneRun(unbatched: Bool) async throws {
        let dir = try TemporaryDirectory("sg-exec-crashy")
        defer { dir.remove() }
        let cli = SyncgateCLI(dir: dir)
        var expected: [String: Data] = [:]
        for i in 0..<Self.count {
            let name = "f\(i % 10)/file \(i).bin"
            let data = Data(repeating: UInt8(i % 251), count: 1_000 + i * 13)
            try dir.write("outbox/" + name, data)
            expected[name] = data
        }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: copies
                type: exec
                command: ["\(ExecPluginTests.testPlugin)", "--misbehave", "crash-put"\(unbatched ? ", \"--unbatched\"" : "")]
                concurrency: 4
                retry: {file: 2, base_delay: 10ms, max_delay: 100ms}
                settings: {path: out, every: "200", state: "\(dir.file("puts.state").path)"}
            """)
        let result = try await cli.run(["sync"], timeout: 300)
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        let crashes = result.stderr.components(separatedBy: "crashing on purpose").count - 1
        #expect(crashes >= 4, "the plugin crashed \(crashes) times: \(result.stderr.suffix(1000))")
        var problems: [String] = []
        for (name, data) in expected where (try? dir.read("out/" + name)) != data { problems.append(name) }
        #expect(problems.isEmpty, "\(problems.prefix(10))")
        let status = SyncgateCLI.json(try await cli.run(["status", "--json"]).stdout)
        let line = (status?["destinations"] as? [[String: Any]])?.first ?? [:]
        #expect(line["state"] as? String == "available", "\(line)")
        #expect(line["synced"] as? Int == Self.count && line["failed"] as? Int == 0, "\(line)")
    }
}
