import Foundation
import SyncgateTestSupport
import Testing

/// Issue 14 with the real binary: a local destination folder that cannot be used blocks the destination (its files
/// wait, none is failed, and later runs do not try it until `syncgate retry`), while a problem of one subfolder fails
/// only the files under it.
@Suite("local destination: error scopes (real binary)")
struct LocalDestinationScopeTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-local-scope")
        cli = SyncgateCLI(dir: dir)
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: archive, type: local, path: synced}]
            """)
        try dir.write("outbox/a.txt", "a")
        try dir.write("outbox/sub/b.txt", "b")
        try dir.write("outbox/locked/c.txt", "c")
    }

    static func events(_ result: ProcessResult, _ name: String) -> [[String: Any]] {
        SyncgateCLI.events(result.stdout).filter { $0["event"] as? String == name }
    }

    /// `status --json`'s line for the destination.
    func destination(asUser user: String? = nil) async throws -> [String: Any] {
        let status = try await cli.run(["status", "--json"], asUser: user)
        return try #require((SyncgateCLI.json(status.stdout)?["destinations"] as? [[String: Any]])?.first, "\(status.stdout)")
    }

    /// Runs as an unprivileged user when the tests run as root (root may write anywhere); nil otherwise.
    func unprivileged() -> String? {
        guard geteuid() == 0 else { return nil }
        chmod(dir.path, 0o777)
        chmod(dir.file("plugins.yaml").path, 0o644)
        for folder in ["outbox", "outbox/sub", "outbox/locked"] { chmod(dir.file(folder).path, 0o755) }
        for file in ["outbox/a.txt", "outbox/sub/b.txt", "outbox/locked/c.txt"] { chmod(dir.file(file).path, 0o644) }
        return "65534"
    }

    @Test func aFileWhereTheDestinationFolderShouldBeBlocksItUntilRetry() async throws {
        defer { dir.remove() }
        try dir.write("synced", "a file, not a folder")
        let first = try await cli.run(["sync", "--json"])
        #expect(first.status == 1, "blocked: \(first.stderr)")
        #expect(Self.events(first, "failed").isEmpty, "no file is failed for the destination's fault: \(Self.events(first, "failed"))")
        #expect(Self.events(first, "summary").first?["waiting"] as? Int == 3)
        var line = try await destination()
        #expect(line["state"] as? String == "blocked", "\(line)")
        #expect(line["waiting"] as? Int == 3)
        #expect(line["failed"] as? Int == 0)
        #expect(line["error_code"] as? String == "ENOTDIR", "\(line)")
        #expect((line["last_error"] as? String)?.contains("synced: Not a directory") == true, "\(line)")

        // Not tried again while its settings are the same.
        let second = try await cli.run(["sync", "--json"])
        #expect(second.status == 1)
        #expect(Self.events(second, "started").isEmpty)
        #expect(try dir.read("synced") == Data("a file, not a folder".utf8), "left as it was")

        // Fixed, then `retry`: everything that waited goes.
        try FileManager.default.removeItem(at: dir.file("synced"))
        let retried = try await cli.run(["retry", "--json"])
        #expect(retried.status == 0, "\(retried.stderr)")
        #expect(try dir.read("synced/a.txt") == Data("a".utf8))
        #expect(try dir.read("synced/sub/b.txt") == Data("b".utf8))
        #expect(try dir.read("synced/locked/c.txt") == Data("c".utf8))
        line = try await destination()
        #expect(line["state"] as? String == "available", "\(line)")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs setpriv to drop root"))
    func aDestinationFolderSyncgateMayNotWriteInIsBlocked() async throws {
        defer { dir.remove() }
        try FileManager.default.createDirectory(at: dir.file("synced"), withIntermediateDirectories: true)
        let user = unprivileged()
        chmod(dir.file("synced").path, 0o555)
        let first = try await cli.run(["sync", "--json"], asUser: user)
        #expect(first.status == 1, "\(first.stderr)")
        #expect(Self.events(first, "failed").isEmpty, "\(Self.events(first, "failed"))")
        var line = try await destination(asUser: user)
        #expect(line["state"] as? String == "blocked", "\(line)")
        #expect(line["waiting"] as? Int == 3)
        #expect(line["error_code"] as? String == "EACCES", "\(line)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("synced").path).isEmpty)

        // `retry` before the fix: the probe finds the folder still closed to syncgate; nothing is sent or failed.
        let early = try await cli.run(["retry", "--json"], asUser: user)
        #expect(early.status == 1, "\(early.stderr)")
        #expect(Self.events(early, "failed").isEmpty && Self.events(early, "started").isEmpty, "\(early.stdout)")
        line = try await destination(asUser: user)
        #expect(line["state"] as? String == "blocked", "\(line)")
        #expect((line["last_error"] as? String)?.contains("syncgate may not write in") == true, "the probe's finding: \(line)")

        chmod(dir.file("synced").path, 0o777)
        let retried = try await cli.run(["retry", "--json"], asUser: user)
        #expect(retried.status == 0, "\(retried.stderr)")
        #expect(try dir.read("synced/sub/b.txt") == Data("b".utf8))
        line = try await destination(asUser: user)
        #expect(line["state"] as? String == "available", "\(line)")
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs setpriv to drop root"))
    func aSubfolderSyncgateMayNotWriteInFailsItsFilesAlone() async throws {
        defer { dir.remove() }
        try FileManager.default.createDirectory(at: dir.file("synced/locked"), withIntermediateDirectories: true)
        let user = unprivileged()
        chmod(dir.file("synced").path, 0o777)
        chmod(dir.file("synced/locked").path, 0o555)
        let result = try await cli.run(["sync", "--json"], asUser: user)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(try dir.read("synced/a.txt") == Data("a".utf8))
        #expect(try dir.read("synced/sub/b.txt") == Data("b".utf8))
        let failed = Self.events(result, "failed")
        #expect(failed.compactMap { $0["path"] as? String } == ["locked/c.txt"])
        #expect(failed.first?["class"] as? String == "permanent")
        #expect((failed.first?["error"] as? String)?.contains("Permission denied") == true, "\(failed)")
        let line = try await destination(asUser: user)
        #expect(line["state"] as? String == "available", "\(line)")
        #expect(line["failed"] as? Int == 1)
    }
}
