import Foundation
import SyncgateTestSupport
import Testing

/// A mirror (`delete_remote: true`) never deletes because its source went away rather than its files: an unmounted
/// source, a source link switched to an empty folder, a source that lost more than `max_delete_fraction` of its files
/// are held back (exit 1, nothing deleted, the reason said) until `sync --accept-source-changes`; and `syncgate run`
/// counts `max_delete` over an hour, not per pass. The real binary, a local folder destination.
@Suite("a mirror never deletes because its source went away", .serialized)
struct MirrorJudgementTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-judge")
        cli = SyncgateCLI(dir: dir)
    }

    func config(sourcePath: String = "outbox", sourceKeys: String = "", destinationKeys: String = "", extra: String = "") throws {
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: "\(sourcePath)"\(sourceKeys)}]
            destinations:
              - {name: mirror, type: local, path: mirror, delete_remote: true\(destinationKeys)}
            \(extra)
            """)
    }

    func writeFiles(_ count: Int, in folder: String = "outbox") throws {
        for i in 0..<count { try dir.write("\(folder)/f\(i).txt", "file \(i)") }
    }

    /// The copies at the mirror.
    func copies() -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir.file("mirror").path)) ?? []).filter { $0.hasSuffix(".txt") }.count
    }

    /// `sync --json`, its summary event.
    func sync(_ arguments: [String] = []) async throws -> (result: ProcessResult, summary: [String: Any]) {
        let result = try await cli.run(["sync", "--json"] + arguments)
        let summary = SyncgateCLI.events(result.stdout).last { $0["event"] as? String == "summary" } ?? [:]
        return (result, summary)
    }

    func heldBack(_ summary: [String: Any]) -> [[String: Any]] {
        summary["held_back"] as? [[String: Any]] ?? []
    }

    // MARK: - sync

    @Test(.enabled(if: geteuid() == 0, "needs root to mount a tmpfs (mount -t tmpfs); skipped when not root"))
    func anUnmountedSourceDeletesNothingAndSaysWhy() async throws {
        defer { dir.remove() }
        let mountPoint = dir.file("outbox").path
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        func mount() async throws {
            let mounted = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint])
            try #require(mounted.status == 0, "mount -t tmpfs: \(mounted.output)")
        }
        func unmount() async throws {
            let unmounted = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/umount"), [mountPoint])
            try #require(unmounted.status == 0, "umount: \(unmounted.output)")
        }
        defer { umount2(mountPoint, Int32(MNT_DETACH)) }  // whatever happened: no mount is left behind
        try await mount()
        try config()
        try writeFiles(50)
        let first = try await sync()
        #expect(first.result.status == 0, "\(first.result.output)")
        #expect(copies() == 50)

        try await unmount()
        #expect(try FileManager.default.contentsOfDirectory(atPath: mountPoint).isEmpty, "the mount point stays, empty")
        let away = try await sync()
        #expect(away.result.status == 1, "held back: \(away.result.output)")
        #expect(copies() == 50, "no copy deleted")
        #expect(heldBack(away.summary).first?["source"] as? String == "outbox", "\(away.summary)")
        #expect(heldBack(away.summary).first?["gone"] as? Int == 50)
        #expect(away.summary["remote_deleted"] as? Int == 0)
        #expect((heldBack(away.summary).first?["reason"] as? String)?.contains("another one") == true, "\(away.summary)")
        // The refusal holds on the next run (what was recorded is not replaced by a refused walk), said in the summary.
        let again = try await cli.run(["sync"])
        #expect(again.status == 1 && copies() == 50, "\(again.output)")
        #expect(again.stderr.contains("source outbox held back: its folder is another one") && again.stderr.contains("--accept-source-changes"),
                "\(again.stderr)")

        // Mounted again (another device) with the same files: nothing is gone, nothing is deleted, exit 0.
        try await mount()
        try writeFiles(50)
        let back = try await sync()
        #expect(back.result.status == 0, "\(back.result.output)")
        #expect(heldBack(back.summary).isEmpty && back.summary["remote_deleted"] as? Int == 0, "\(back.summary)")
        #expect(copies() == 50)
        let status = try await cli.run(["status", "--json"])
        let mirror = (SyncgateCLI.json(status.stdout)?["destinations"] as? [[String: Any]])?.first
        #expect(mirror?["synced"] as? Int == 50, "no row was left marked removed: \(String(describing: mirror))")
        try await unmount()
    }

    @Test func aSourceLinkSwitchedToAnEmptyFolderDeletesNothing() async throws {
        defer { dir.remove() }
        try writeFiles(30, in: "x")
        try FileManager.default.createDirectory(at: dir.file("y"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir.file("outbox").path, withDestinationPath: "x")
        try config()
        let first = try await sync()
        #expect(first.result.status == 0, "\(first.result.output)")
        #expect(copies() == 30)

        try FileManager.default.removeItem(at: dir.file("outbox"))
        try FileManager.default.createSymbolicLink(atPath: dir.file("outbox").path, withDestinationPath: "y")
        let switched = try await sync()
        #expect(switched.result.status == 1, "\(switched.result.output)")
        #expect(copies() == 30, "no copy deleted")
        #expect(heldBack(switched.summary).first?["gone"] as? Int == 30, "\(switched.summary)")
        #expect((heldBack(switched.summary).first?["reason"] as? String)?.contains("another one") == true, "\(switched.summary)")

        // Switched back: the files are there again, nothing was marked removed, nothing is deleted.
        try FileManager.default.removeItem(at: dir.file("outbox"))
        try FileManager.default.createSymbolicLink(atPath: dir.file("outbox").path, withDestinationPath: "x")
        let back = try await sync()
        #expect(back.result.status == 0 && back.summary["remote_deleted"] as? Int == 0, "\(back.result.output)")
        #expect(copies() == 30)
    }

    @Test func moreThanMaxDeleteFractionGoneIsHeldBackHalfOrLessIsDeleted() async throws {
        defer { dir.remove() }
        try config()
        try writeFiles(10)
        #expect(try await sync().result.status == 0)

        // 6 of 10 gone: more than 0.5.
        for i in 0..<6 { try FileManager.default.removeItem(at: dir.file("outbox/f\(i).txt")) }
        let six = try await sync()
        #expect(six.result.status == 1, "\(six.result.output)")
        #expect(copies() == 10, "nothing deleted")
        #expect((heldBack(six.summary).first?["reason"] as? String)?.contains("max_delete_fraction") == true, "\(six.summary)")
        #expect(six.summary["removed_from_sources"] as? Int == 0, "none marked removed")

        // Two of them back: 4 of 10 gone, not more than 0.5.
        for i in 0..<2 { try dir.write("outbox/f\(i).txt", "file \(i)") }
        let four = try await sync()
        #expect(four.result.status == 0, "\(four.result.output)")
        #expect(four.summary["remote_deleted"] as? Int == 4, "\(four.summary)")
        #expect(copies() == 6)
    }

    @Test func aSourceEmptiedOnPurposeIsMirroredWithTheOverride() async throws {
        defer { dir.remove() }
        try config(sourceKeys: ", max_delete_fraction: 1")
        try writeFiles(8)
        #expect(try await sync().result.status == 0)
        for i in 0..<8 { try FileManager.default.removeItem(at: dir.file("outbox/f\(i).txt")) }

        // Found empty: held back even with max_delete_fraction 1.
        let empty = try await sync()
        #expect(empty.result.status == 1, "\(empty.result.output)")
        #expect((heldBack(empty.summary).first?["reason"] as? String)?.contains("empty") == true, "\(empty.summary)")
        #expect(copies() == 8)

        let accepted = try await sync(["--accept-source-changes"])
        #expect(accepted.result.status == 0, "\(accepted.result.output)")
        #expect(accepted.summary["remote_deleted"] as? Int == 8, "\(accepted.summary)")
        #expect(copies() == 0)
        // Recorded as it is now: an empty source stays quiet.
        let after = try await sync()
        #expect(after.result.status == 0 && heldBack(after.summary).isEmpty, "\(after.result.output)")
    }

    @Test func maxDeleteFractionIsValidated() async throws {
        defer { dir.remove() }
        try config(sourceKeys: ", max_delete_fraction: 0")
        try writeFiles(1)
        let result = try await cli.run(["validate"])
        #expect(result.status == 78)
        #expect(result.output.contains("max_delete_fraction: must be > 0 and <= 1"), "\(result.output)")
    }

    // MARK: - run

    /// Waits (polling) until `condition` holds; false after `timeout` seconds.
    func eventually(_ timeout: TimeInterval = 60, _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try await condition() { return true }
            try? await Task.sleep(for: .milliseconds(200))
        }
        return try await condition()
    }

    var log: String { (try? String(contentsOf: dir.file("gateway.log"), encoding: .utf8)) ?? "" }

    func stop(_ process: ChildProcess) async -> Int32 {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        if !(await ProcessRunner.waitForExit(process, timeout: 30)) {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return -9
        }
        return process.terminationStatus
    }

    @Test func aGatewayDeletesAtMostMaxDeletePerHour() async throws {
        defer { dir.remove() }
        try config(sourceKeys: ", max_delete_fraction: 1", destinationKeys: ", max_delete: 100",
                   extra: "gateway: { settle: 200ms, rescan_interval: 10m }")
        try writeFiles(300)
        let gateway = try ProcessRunner.start(SyncgateCLI.binary, ["run", "-v"], currentDirectory: dir.url, logFile: dir.file("gateway.log"))
        #expect(try await eventually(120) { log.contains("the watches are set") && copies() == 300 }, "\(log)")

        // 40 removed at a time, each round once the gateway has acted on the one before.
        var removed = 0
        for round in 0..<4 {
            for i in removed..<(removed + 40) { try FileManager.default.removeItem(at: dir.file("outbox/f\(i).txt")) }
            removed += 40
            if round < 2 {
                #expect(try await eventually(120) { copies() == 300 - removed }, "round \(round): \(copies()) copies: \(log)")
            } else {
                #expect(try await eventually(120) { log.components(separatedBy: "would exceed max_delete").count > round - 1 }, "round \(round): \(log)")
            }
        }
        // 160 removed; at most 100 copies deleted within the hour (80 or 100, as the passes fell).
        let deleted = 300 - copies()
        #expect(deleted >= 80 && deleted <= 100, "\(deleted) copies deleted: \(log)")
        #expect(log.contains("per hour"), "the log says why")
        #expect(await stop(gateway) == 0)
        #expect(300 - copies() == deleted, "nothing deleted while stopping")
    }

    @Test func aGatewayShowsASourceHeldBackUntilItClears() async throws {
        defer { dir.remove() }
        let port = Loopback.freePort()
        try writeFiles(12, in: "x")
        try FileManager.default.createDirectory(at: dir.file("y"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir.file("outbox").path, withDestinationPath: "x")
        try config(extra: """
            gateway: { settle: 200ms, rescan_interval: 1s }
            http: { listen: 127.0.0.1:\(port) }
            """)
        let gateway = try ProcessRunner.start(SyncgateCLI.binary, ["run", "-v"], currentDirectory: dir.url, logFile: dir.file("gateway.log"))
        #expect(try await eventually(120) { log.contains("the watches are set") && copies() == 12 }, "\(log)")
        func held() -> String {
            guard let body = try? LoopbackHTTP.request(port: port, "GET", "/api/status"),
                  let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else { return "?" }
            return ((object["held_back"] as? [[String: Any]]) ?? []).compactMap { $0["source"] as? String }.joined(separator: ",")
        }
        #expect(try await eventually(60) { held() == "" })

        try FileManager.default.removeItem(at: dir.file("outbox"))
        try FileManager.default.createSymbolicLink(atPath: dir.file("outbox").path, withDestinationPath: "y")
        #expect(try await eventually(120) { held() == "outbox" }, "\(log)")
        #expect(log.contains("source outbox held back"), "\(log)")
        // Full passes every second: the refusal is logged once, not every pass.
        try await Task.sleep(for: .seconds(3))
        #expect(log.components(separatedBy: "source outbox held back").count == 2, "\(log)")
        #expect(copies() == 12, "no copy deleted")

        try FileManager.default.removeItem(at: dir.file("outbox"))
        try FileManager.default.createSymbolicLink(atPath: dir.file("outbox").path, withDestinationPath: "x")
        #expect(try await eventually(120) { held() == "" && log.contains("no longer held back") }, "\(log)")
        #expect(copies() == 12)
        #expect(await stop(gateway) == 0)
    }
}
