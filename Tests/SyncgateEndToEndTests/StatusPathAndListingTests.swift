import Foundation
import SyncgateTestSupport
import Testing

/// `status PATH` for a path the ledger does not know exits 1 and says so; `ls -l` shows each file's size and
/// modification time, as `rclone lsl` and `aws s3 ls` do (issue 29). The built binary.
@Suite("status PATH and ls -l (real binary)")
struct StatusPathAndListingTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-status-ls")
        cli = SyncgateCLI(dir: dir)
    }

    func setUp() async throws {
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: archive, type: local, path: synced}]
            """)
        try dir.write("outbox/a.txt", "alpha")
        try dir.write("outbox/b/c.txt", "charlie!")
        #expect(try await cli.run(["sync"]).status == 0)
    }

    @Test func statusOfAnUnknownPathExits1() async throws {
        defer { dir.remove() }
        try await setUp()
        let known = try await cli.run(["status", "a.txt", "outbox/b/c.txt"])
        #expect(known.status == 0, "\(known.stderr)")
        #expect(known.stderr.isEmpty)
        let unknown = try await cli.run(["status", "a.txt", "nosuch.txt", "outbox/b/nothere.txt"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.split(separator: "\n").map(String.init) == [
            "syncgate: nosuch.txt: not in the ledger: no sync has seen it; give the path relative to its source folder, or the path of a file inside one",
            "syncgate: outbox/b/nothere.txt (b/nothere.txt in its source): not in the ledger: no sync has seen it; give the path relative to its source folder, or the path of a file inside one",
        ], "\(unknown.stderr)")
        // The known one is still shown.
        #expect(unknown.stdout.contains("a.txt"), "\(unknown.stdout)")
        // A file a source holds that no sync has seen yet, one its globs leave out, one no route sends: each says so.
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox, exclude: ["**/*.tmp"]}]
            destinations: [{name: archive, type: local, path: synced}]
            routes: [{match: ["**/*.txt"], to: [archive]}]
            """)
        try dir.write("outbox/new.txt", "new")
        try dir.write("outbox/part.tmp", "partial")
        try dir.write("outbox/b/photo.jpg", "jpg")
        let held = try await cli.run(["status", "new.txt", "outbox/part.tmp", "b/photo.jpg"])
        #expect(held.status == 1)
        #expect(held.stderr.split(separator: "\n").map(String.init) == [
            "syncgate: new.txt: not in the ledger: it is in source outbox and no sync has seen it yet: the next one sends it to archive",
            "syncgate: outbox/part.tmp (part.tmp in its source): not in the ledger: it is in source outbox, whose include and exclude leave it out",
            "syncgate: b/photo.jpg: not in the ledger: it is in source outbox, but no route sends it anywhere",
        ], "\(held.stderr)")
        let json = try await cli.run(["status", "--json", "nosuch.txt"])
        #expect(json.status == 1)
        #expect(SyncgateCLI.json(json.stdout) != nil, "the report is still printed: \(json.stdout)")
    }

    @Test func longListingShowsSizeAndTime() async throws {
        defer { dir.remove() }
        try await setUp()
        let modified = try #require(try FileManager.default.attributesOfItem(atPath: dir.file("synced/b/c.txt").path)[.modificationDate] as? Date)
        let utc = DateFormatter()
        utc.locale = Locale(identifier: "en_US_POSIX")
        utc.timeZone = TimeZone(identifier: "UTC")
        utc.dateFormat = "yyyy-MM-dd HH:mm:ss"
        let long = try await cli.run(["ls", "--destination", "archive", "-l"])
        #expect(long.status == 0, "\(long.stderr)")
        let lines = long.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("           8  \(utc.string(from: modified))  b/c.txt"), "\(long.stdout)")
        #expect(lines.contains { $0.hasPrefix("           5  ") && $0.hasSuffix("  a.txt") }, "\(long.stdout)")
        #expect(lines.last?.hasPrefix("2 file(s)") == true, "\(long.stdout)")
        // Without -l, as before: size and name.
        let short = try await cli.run(["ls", "--destination", "archive"])
        #expect(short.stdout.split(separator: "\n").contains("           8  b/c.txt"), "\(short.stdout)")
        // JSON has the time too.
        let json = try await cli.run(["ls", "--destination", "archive", "--json"])
        let files = try #require(SyncgateCLI.json(json.stdout)?["files"] as? [[String: Any]])
        #expect(files.allSatisfy { ($0["modified"] as? String)?.hasSuffix("Z") == true }, "\(json.stdout)")
        // The destination may be named without --destination (as `rclone ls remote:`), or left out when the config
        // has only one; a name that is not there, or two names, are usage errors.
        // (The files' lines are compared; the last line's free space moves with whatever else writes to the disk.)
        for arguments in [["ls", "archive", "-l"], ["ls", "-l"]] {
            let same = try await cli.run(arguments)
            #expect(same.status == 0, "\(arguments): \(same.stderr)")
            #expect(same.stdout.split(separator: "\n").dropLast() == long.stdout.split(separator: "\n").dropLast(), "\(arguments): \(same.stdout)")
        }
        let unknown = try await cli.run(["ls", "archives"])
        #expect(unknown.status == 64 && unknown.stderr.contains("no destination named 'archives' (known: archive)"), "\(unknown.stderr)")
        let two = try await cli.run(["ls", "archive", "--destination", "other"])
        #expect(two.status == 64 && two.stderr.contains("ls lists one"), "\(two.stderr)")
    }
}
