import Foundation
import SyncgateTestSupport
import Testing

/// The hostile side of issue 20: symbolic links planted in a local destination (a folder link at the top, one deep
/// in the tree, one where the file itself goes, dangling ones, a link to a file outside, one swapped in between two
/// runs) must never let `sync`, `rm` or `ls` write, rename, delete or list anything outside the destination. Each
/// test fingerprints the outside tree (`elsewhere/`, which holds files under the very names a followed write or
/// delete would touch) before and after, and checks what the exit code and the ledger say.
@Suite("local destination: symbolic links (real binary)")
struct LocalSymlinkTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-links-dst")
        cli = SyncgateCLI(dir: dir)
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: archive, type: local, path: synced}]
            """)
        // The bait: what a write, rename or delete through a link would change.
        for name in ["a.txt", "b.txt", "target.txt", "sub/a.txt", "sub/b.txt", "sub/d/e.txt"] {
            try dir.write("elsewhere/" + name, "outside: \(name)")
        }
        // A stale temporary file of a process that is gone: the clean-up must not reach it through a link.
        try dir.write("elsewhere/.syncgate-tmp-2147483646-1-a.txt", "not syncgate's to remove")
        try FileManager.default.createDirectory(at: dir.file("synced"), withIntermediateDirectories: true)
    }

    // MARK: - Helpers

    func link(_ path: String, to target: String) throws {
        try FileManager.default.createDirectory(at: dir.file(path).deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir.file(path).path, withDestinationPath: target)
    }

    /// The target of the link at `path`, nil when `path` is not a link.
    func linkTarget(_ path: String) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: dir.file(path).path)
    }

    /// Whether anything (a dangling link included) is at `path`.
    func anything(at path: String) -> Bool {
        var st = stat()
        return lstat(dir.file(path).path, &st) == 0
    }

    func outside() throws -> TreeSnapshot { try TreeSnapshot(dir.file("elsewhere").path) }

    static func events(_ result: ProcessResult, _ name: String) -> [[String: Any]] {
        SyncgateCLI.events(result.stdout).filter { $0["event"] as? String == name }
    }

    /// The failed files of a run: path -> (class, error).
    static func failures(_ result: ProcessResult) -> [String: (class: String, error: String)] {
        var out: [String: (class: String, error: String)] = [:]
        for event in events(result, "failed") {
            guard let path = event["path"] as? String else { continue }
            out[path] = (event["class"] as? String ?? "", event["error"] as? String ?? "")
        }
        return out
    }

    /// `status --json --failed`: path -> last error.
    func failedInLedger() async throws -> [String: String] {
        let status = try await cli.run(["status", "--json", "--failed"])
        let files = try #require(SyncgateCLI.json(status.stdout)?["files"] as? [[String: Any]], "\(status.stdout)")
        var out: [String: String] = [:]
        for file in files where file["status"] as? String == "failed" {
            out[file["path"] as? String ?? "?"] = file["last_error"] as? String ?? ""
        }
        return out
    }

    /// `ls --json`'s names.
    func listed() async throws -> [String] {
        let result = try await cli.run(["ls", "--destination", "archive", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let files = try #require(SyncgateCLI.json(result.stdout)?["files"] as? [[String: Any]], "\(result.stdout)")
        return files.compactMap { $0["name"] as? String }
    }

    /// `rm --json`: name -> error (nil: deleted).
    func remove(_ names: [String]) async throws -> (status: Int32, errors: [String: String?]) {
        let result = try await cli.run(["rm", "--destination", "archive", "--json"] + names)
        let results = try #require(SyncgateCLI.json(result.stdout)?["results"] as? [[String: Any]], "\(result.stdout) \(result.stderr)")
        var out: [String: String?] = [:]
        for entry in results {
            out[entry["name"] as? String ?? "?"] = entry["deleted"] as? Bool == true ? String?.none : (entry["error"] as? String ?? "")
        }
        return (result.status, out)
    }

    // MARK: - Tests

    @Test func aLinkedFolderAtTheTopFailsItsFilesWhileTheRestSyncs() async throws {
        defer { dir.remove() }
        try dir.write("outbox/docs/a.txt", "inside a")
        try dir.write("outbox/docs/sub/b.txt", "inside b")
        try dir.write("outbox/top.txt", "top")
        try dir.write("outbox/keep/k.txt", "k")
        try link("synced/docs", to: dir.file("elsewhere").path)
        // A stale temporary file in a real folder is still removed (the clean-up works where it may).
        try dir.write("synced/keep/.syncgate-tmp-2147483646-1-k.txt", "debris")
        let before = try outside()

        let result = try await cli.run(["sync", "--json"])
        #expect(result.status == 1, "a permanent failure: \(result.stderr)")
        #expect(try dir.read("synced/top.txt") == Data("top".utf8))
        #expect(try dir.read("synced/keep/k.txt") == Data("k".utf8))
        #expect(!anything(at: "synced/keep/.syncgate-tmp-2147483646-1-k.txt"))
        let failed = Self.failures(result)
        #expect(Set(failed.keys) == ["docs/a.txt", "docs/sub/b.txt"])
        for (path, failure) in failed {
            #expect(failure.class == "permanent", "\(path)")
            #expect(failure.error.contains("synced/docs is a symbolic link to \(dir.file("elsewhere").path)"), "\(path): \(failure.error)")
        }
        #expect(try outside() == before, "nothing outside the destination changed")
        #expect(linkTarget("synced/docs") == dir.file("elsewhere").path, "the link is left as it was")
        let ledger = try await failedInLedger()
        #expect(Set(ledger.keys) == ["docs/a.txt", "docs/sub/b.txt"])
        #expect(ledger.values.allSatisfy { $0.contains("symbolic link") })

        // Not retried on its own; once the link is replaced by a folder, `retry` delivers.
        let again = try await cli.run(["sync", "--json"])
        #expect(again.status == 1)
        #expect(Self.events(again, "started").isEmpty)
        #expect(try outside() == before)
        try FileManager.default.removeItem(atPath: dir.file("synced/docs").path)
        let retried = try await cli.run(["retry", "--json"])
        #expect(retried.status == 0, "\(retried.stderr)")
        #expect(try dir.read("synced/docs/a.txt") == Data("inside a".utf8))
        #expect(try dir.read("synced/docs/sub/b.txt") == Data("inside b".utf8))
        #expect(try outside() == before)
    }

    @Test func aLinkDeepInTheTreeIsNeverFollowed() async throws {
        defer { dir.remove() }
        try dir.write("outbox/a/b/ok.txt", "ok")
        try dir.write("outbox/a/b/c/a.txt", "deep a")
        try dir.write("outbox/a/b/c/d/e.txt", "deep e")
        try dir.write("synced/a/b/earlier.txt", "kept")
        try link("synced/a/b/c", to: dir.file("elsewhere/sub").path)
        let before = try outside()

        let result = try await cli.run(["sync", "--json"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(try dir.read("synced/a/b/ok.txt") == Data("ok".utf8))
        let failed = Self.failures(result)
        #expect(Set(failed.keys) == ["a/b/c/a.txt", "a/b/c/d/e.txt"])
        #expect(failed.values.allSatisfy { $0.class == "permanent" && $0.error.contains("synced/a/b/c is a symbolic link") }, "\(failed)")
        #expect(try outside() == before)
        #expect(linkTarget("synced/a/b/c") == dir.file("elsewhere/sub").path)
        #expect(try await failedInLedger().count == 2)
    }

    @Test func linksWhereTheFileOrAFolderGoesDanglingOrToAFileOutside() async throws {
        defer { dir.remove() }
        for path in ["f.txt", "g.txt", "h/x.txt", "gone/y.txt", "plain.txt"] { try dir.write("outbox/" + path, "new \(path)") }
        try link("synced/f.txt", to: dir.file("elsewhere/target.txt").path)  // a link to a file outside, where the file goes
        try link("synced/g.txt", to: dir.file("nowhere.txt").path)  // dangling, where the file goes
        try link("synced/h", to: dir.file("elsewhere/target.txt").path)  // a link to a file, where a folder goes
        try link("synced/gone", to: dir.file("nowhere").path)  // dangling, where a folder goes
        let before = try outside()

        let result = try await cli.run(["sync", "--json"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(try dir.read("synced/plain.txt") == Data("new plain.txt".utf8))
        let failed = Self.failures(result)
        #expect(Set(failed.keys) == ["f.txt", "g.txt", "h/x.txt", "gone/y.txt"])
        for (path, failure) in failed {
            let link = "synced/" + path.split(separator: "/").first!
            #expect(failure.class == "permanent" && failure.error.contains("\(link) is a symbolic link to "), "\(path): \(failure.error)")
        }
        #expect(try outside() == before)
        #expect(try dir.read("elsewhere/target.txt") == Data("outside: target.txt".utf8))
        #expect(!anything(at: "nowhere.txt") && !anything(at: "nowhere"), "a dangling link's target is not created")
        #expect(linkTarget("synced/f.txt") == dir.file("elsewhere/target.txt").path)
        #expect(linkTarget("synced/g.txt") == dir.file("nowhere.txt").path)
        #expect(linkTarget("synced/h") == dir.file("elsewhere/target.txt").path)
        #expect(linkTarget("synced/gone") == dir.file("nowhere").path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("synced").path).sorted() == ["f.txt", "g.txt", "gone", "h", "plain.txt"],
                "no temporary file left behind")
    }

    @Test func aLinkSwappedInBetweenTwoRunsStopsSyncRmAndLs() async throws {
        defer { dir.remove() }
        try dir.write("outbox/sub/a.txt", "first a")
        try dir.write("outbox/sub/b.txt", "first b")
        try dir.write("outbox/other.txt", "other")
        let first = try await cli.run(["sync", "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(try await listed() == ["other.txt", "sub/a.txt", "sub/b.txt"])

        // Between the runs the folder is moved away and a link to the outside put in its place.
        try FileManager.default.moveItem(at: dir.file("synced/sub"), to: dir.file("moved-away"))
        try link("synced/sub", to: dir.file("elsewhere").path)
        try dir.write("outbox/sub/a.txt", "second a, longer")
        let before = try outside()

        let second = try await cli.run(["sync", "--json"])
        #expect(second.status == 1, "\(second.stderr)")
        let failed = Self.failures(second)
        #expect(Set(failed.keys) == ["sub/a.txt"])
        #expect(failed["sub/a.txt"]?.error.contains("synced/sub is a symbolic link") == true)
        #expect(try outside() == before)

        // ls does not follow the link (elsewhere's files are not listed); rm does not delete through it.
        #expect(try await listed() == ["other.txt"])
        let removed = try await remove(["sub/b.txt"])
        #expect(removed.status == 1)
        #expect(removed.errors["sub/b.txt"]??.contains("symbolic link") == true, "\(removed.errors)")
        #expect(try outside() == before)
        #expect(try dir.read("elsewhere/b.txt") == Data("outside: b.txt".utf8))
        #expect(try dir.read("moved-away/b.txt") == Data("first b".utf8))
    }

    @Test func rmAndLsNeverReachThroughALink() async throws {
        defer { dir.remove() }
        try dir.write("outbox/real.txt", "real")
        try dir.write("outbox/folder/in.txt", "in")
        #expect(try await cli.run(["sync"]).status == 0)
        try link("synced/docs", to: dir.file("elsewhere").path)
        try link("synced/folder/deep", to: dir.file("elsewhere/sub").path)
        try link("synced/f.txt", to: dir.file("elsewhere/target.txt").path)
        try link("synced/dangling.txt", to: dir.file("nowhere").path)
        let before = try outside()

        #expect(try await listed() == ["folder/in.txt", "real.txt"], "links are neither followed nor listed")
        let removed = try await remove(["docs/a.txt", "folder/deep/a.txt", "f.txt", "dangling.txt", "real.txt"])
        #expect(removed.status == 1)
        #expect(removed.errors["real.txt"] == .some(nil), "a real file is deleted: \(removed.errors)")
        for name in ["docs/a.txt", "folder/deep/a.txt", "f.txt", "dangling.txt"] {
            #expect(removed.errors[name]??.contains("is a symbolic link") == true, "\(name): \(String(describing: removed.errors[name]))")
        }
        #expect(!anything(at: "synced/real.txt"))
        #expect(try outside() == before)
        #expect(linkTarget("synced/f.txt") == dir.file("elsewhere/target.txt").path)
        #expect(linkTarget("synced/dangling.txt") == dir.file("nowhere").path)
        #expect(linkTarget("synced/docs") == dir.file("elsewhere").path)
    }

    @Test func aDestinationFolderThatIsItselfALinkIsFollowedOnce() async throws {
        defer { dir.remove() }
        // `path: synced` is a link to a folder on "another disk": legitimate, the rule applies below it.
        try FileManager.default.removeItem(at: dir.file("synced"))
        try FileManager.default.createDirectory(at: dir.file("disk/backup"), withIntermediateDirectories: true)
        try link("synced", to: dir.file("disk/backup").path)
        try dir.write("outbox/a.txt", "a")
        try dir.write("outbox/x/y/z.txt", "z")
        try dir.write("outbox/docs/n.txt", "n")
        try link("disk/backup/docs", to: dir.file("elsewhere").path)
        let before = try outside()

        let result = try await cli.run(["sync", "--json"])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(try dir.read("disk/backup/a.txt") == Data("a".utf8))
        #expect(try dir.read("disk/backup/x/y/z.txt") == Data("z".utf8))
        #expect(Set(Self.failures(result).keys) == ["docs/n.txt"])
        #expect(linkTarget("synced") == dir.file("disk/backup").path)
        #expect(try await listed() == ["a.txt", "x/y/z.txt"])
        let removed = try await remove(["x/y/z.txt"])
        #expect(removed.status == 0 && removed.errors["x/y/z.txt"] == .some(nil), "\(removed.errors)")
        #expect(!anything(at: "disk/backup/x/y/z.txt"))
        #expect(try outside() == before)
    }
}
