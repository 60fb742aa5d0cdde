import Foundation
import SyncgateTestSupport
import Testing

/// A local destination's `path` changed between two syncs (the real binary): the new folder holds none of what the
/// ledger says was delivered, so the next sync copies every file there and says why; a change of any other key
/// (`concurrency`) sends nothing again; a dry run after a change says what a sync would send and changes nothing.
@Suite("a destination pointed elsewhere (real binary, local destination)")
struct DestinationRetargetTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-retarget")
        cli = SyncgateCLI(dir: dir)
    }

    func config(path: String, concurrency: Int = 4, mirror: Bool = false) throws {
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: archive, type: local, path: \(path), fsync: false, concurrency: \(concurrency), delete_remote: \(mirror)}]
            """)
    }

    func uploaded(_ result: ProcessResult) -> Int? {
        SyncgateCLI.events(result.stdout).last { $0["event"] as? String == "summary" }?["uploaded"] as? Int
    }

    @Test func aNewFolderGetsEveryFileAgainAndOtherChangesNothing() async throws {
        defer { dir.remove() }
        for name in ["a.txt", "sub/b.txt", "c.txt"] { try dir.write("outbox/\(name)", name) }
        try config(path: "first")
        let first = try await cli.run(["sync", "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(uploaded(first) == 3)
        #expect(!first.stderr.contains("now points at"))

        // Another key changed: nothing is sent again.
        try config(path: "first", concurrency: 2)
        let tuned = try await cli.run(["sync", "--json"])
        #expect(uploaded(tuned) == 0, "\(tuned.stdout)")
        #expect(!tuned.stderr.contains("now points at"))

        // Another folder: a dry run lists the three and changes nothing; the sync after it copies them there, and
        // says why.
        try config(path: "second")
        let dry = try await cli.run(["sync", "--dry-run", "--json"])
        #expect(dry.status == 0)
        #expect(SyncgateCLI.events(dry.stdout).last { $0["event"] as? String == "summary" }?["planned"] as? Int == 3, "\(dry.stdout)")
        #expect(dry.stderr.contains("archive: the destination now points at \(dir.file("second").path), not where its copies were recorded; a sync would send them again"), "\(dry.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.file("second").path))
        let moved = try await cli.run(["sync", "--json"])
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(uploaded(moved) == 3, "\(moved.stdout)")
        let second = dir.file("second").path
        #expect(moved.stderr.contains("archive: the destination now points at \(second) (it was \(dir.file("first").path)); the 3 file(s) recorded synced there are sent again"), "\(moved.stderr)")
        for name in ["a.txt", "sub/b.txt", "c.txt"] {
            #expect((try? String(contentsOfFile: second + "/" + name, encoding: .utf8)) == name)
        }
        #expect(FileManager.default.fileExists(atPath: dir.file("first/a.txt").path), "the old folder is left as it is")

        // And then nothing more, and status says every file is synced.
        let again = try await cli.run(["sync", "--json"])
        #expect(uploaded(again) == 0)
        let status = try await cli.run(["status", "--json"])
        let destinations = SyncgateCLI.json(status.stdout)?["destinations"] as? [[String: Any]] ?? []
        #expect(destinations.first?["synced"] as? Int == 3, "\(status.stdout)")
    }

    /// A mirror pointed elsewhere deletes only what it wrote there: a file removed from the source in the run that
    /// finds the new folder, whose copy is at the old one, leaves a file of that name in the new folder alone (it is
    /// not syncgate's), and the old folder is not touched. Without `synced_at` cleared, the mirror deleted it.
    @Test func aMirrorPointedElsewhereDeletesNothingItDidNotWriteThere() async throws {
        defer { dir.remove() }
        for name in ["a.txt", "b.txt", "c.txt"] { try dir.write("outbox/\(name)", name) }
        try config(path: "first", mirror: true)
        #expect(try await cli.run(["sync"]).status == 0)
        try dir.write("second/c.txt", "not syncgate's")
        try FileManager.default.removeItem(at: dir.file("outbox/c.txt"))
        try config(path: "second", mirror: true)
        let moved = try await cli.run(["sync", "--json"])
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(uploaded(moved) == 2, "\(moved.stdout)")
        #expect((try? String(contentsOfFile: dir.file("second/c.txt").path, encoding: .utf8)) == "not syncgate's")
        #expect((try? String(contentsOfFile: dir.file("second/a.txt").path, encoding: .utf8)) == "a.txt")
        #expect((try? String(contentsOfFile: dir.file("first/c.txt").path, encoding: .utf8)) == "c.txt", "the old folder is left as it is")
        let deleted = SyncgateCLI.events(moved.stdout).last { $0["event"] as? String == "summary" }?["remote_deleted"] as? Int
        #expect(deleted == 0, "\(moved.stdout.suffix(600))")

        // And a file removed after the change, before it is sent again: nothing of it is deleted there either.
        try config(path: "third", mirror: true)
        try dir.write("third/b.txt", "not syncgate's either")
        try FileManager.default.removeItem(at: dir.file("outbox/b.txt"))
        let third = try await cli.run(["sync", "--json"])
        #expect(third.status == 0, "\(third.stderr)")
        #expect((try? String(contentsOfFile: dir.file("third/b.txt").path, encoding: .utf8)) == "not syncgate's either")
        #expect((try? String(contentsOfFile: dir.file("third/a.txt").path, encoding: .utf8)) == "a.txt")
    }
}
