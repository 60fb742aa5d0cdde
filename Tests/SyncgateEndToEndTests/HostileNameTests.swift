import Foundation
import SyncgateTestSupport
import Testing

/// Sources full of awkward names and things that are not plain files.
@Suite("hostile file names in sources")
struct HostileNameTests {
    @Test func awkwardNamesRoundTripAndSpecialFilesAreSkippedWithWarnings() async throws {
        let dir = try TemporaryDirectory("sg-names")
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: archive, type: local, path: synced}]
            """)
        let names = [
            "with space.txt", "caf\u{E9}.txt", "cafe\u{301}.txt", "line\nbreak.txt", "tab\there.txt", "..dots..txt",
            "-rf", "glob*?[chars].txt", "back\\slash.txt", "emoji-\u{1F697}.txt", "quote'\"mix.txt",
            String(repeating: "L", count: 251) + ".txt", "deep/" + String(repeating: "d/", count: 40) + "leaf.txt",
        ]
        for (index, name) in names.enumerated() { try dir.write("outbox/" + name, "content \(index)") }
        try dir.write("elsewhere/secret.txt", "outside the source")
        try FileManager.default.createSymbolicLink(atPath: dir.file("outbox/outside-link").path, withDestinationPath: dir.file("elsewhere").path)
        try FileManager.default.createSymbolicLink(atPath: dir.file("outbox/loop").path, withDestinationPath: dir.file("outbox").path)
        try FileManager.default.createSymbolicLink(atPath: dir.file("outbox/dangling").path, withDestinationPath: dir.file("nowhere").path)
        #expect(mkfifo(dir.file("outbox/fifo").path, 0o600) == 0)

        let cli = SyncgateCLI(dir: dir)
        let result = try await cli.run(["sync", "--json"], timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        for (index, name) in names.enumerated() {
            #expect(try dir.read("synced/" + name) == Data("content \(index)".utf8), "\(name.debugDescription)")
        }
        let events = SyncgateCLI.events(result.stdout)
        let synced = Set(events.filter { $0["event"] as? String == "synced" }.compactMap { ($0["path"] as? String).map { Array($0.utf8) } })
        #expect(synced.count == names.count, "NFC and NFD names are two files")
        let warned = Set(events.filter { $0["event"] as? String == "warning" }.compactMap { $0["path"] as? String })
        #expect(warned == ["outside-link", "loop", "dangling", "fifo"])
        #expect(!dir.exists("synced/outside-link"))

        let again = try await cli.run(["sync", "--json"], timeout: 60)
        let summary = SyncgateCLI.events(again.stdout).last
        #expect(summary?["uploaded"] as? Int == 0)
        #expect(summary?["up_to_date"] as? Int == names.count)
    }

    @Test func linksAreFollowedWhenConfiguredButNeverInALoop() async throws {
        let dir = try TemporaryDirectory("sg-links")
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox, follow_symlinks: true}]
            destinations: [{name: archive, type: local, path: synced}]
            """)
        try dir.write("outbox/a.txt", "a")
        try dir.write("elsewhere/b.txt", "b")
        try FileManager.default.createSymbolicLink(atPath: dir.file("outbox/linked").path, withDestinationPath: dir.file("elsewhere").path)
        try FileManager.default.createSymbolicLink(atPath: dir.file("outbox/loop").path, withDestinationPath: dir.file("outbox").path)
        let result = try await SyncgateCLI(dir: dir).run(["sync", "--json"], timeout: 60)
        #expect(result.status == 0)
        #expect(try dir.read("synced/linked/b.txt") == Data("b".utf8))
        let warned = SyncgateCLI.events(result.stdout).filter { $0["event"] as? String == "warning" }
        #expect(warned.count == 1)
        #expect((warned.first?["message"] as? String)?.contains("loop") == true)
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"), "needs setpriv"))
    func unreadableFolderIsReportedAndTheRestSyncs() async throws {
        let dir = try TemporaryDirectory("sg-unreadable")
        defer {
            chmod(dir.file("outbox/closed").path, 0o755)
            dir.remove()
        }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: archive, type: local, path: synced}]
            """)
        try dir.write("outbox/open/a.txt", "a")
        try dir.write("outbox/closed/b.txt", "b")
        for path in ["", "outbox", "outbox/open"] { chmod(dir.file(path).path, 0o777) }
        chmod(dir.file("outbox/open/a.txt").path, 0o644)
        chmod(dir.file("plugins.yaml").path, 0o644)
        chmod(dir.file("outbox/closed").path, 0o000)
        let user: String? = geteuid() == 0 ? "65534" : nil
        let result = try await SyncgateCLI(dir: dir).run(["sync", "--json"], asUser: user)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try dir.read("synced/open/a.txt") == Data("a".utf8))
        let warning = SyncgateCLI.events(result.stdout).first { $0["event"] as? String == "warning" }
        #expect(warning?["path"] as? String == "closed")
        #expect((warning?["message"] as? String)?.contains("cannot read folder") == true)
    }

    /// File names holding CR (one leading, that would overwrite its line with "FAKE: all synced"), ESC and BEL are
    /// shown escaped by `sync -v`, `sync --dry-run` and `status` (text); `--json` keeps them exact, JSON-escaped.
    @Test func controlBytesInFileNamesAreEscapedOnTheTerminal() async throws {
        let dir = try TemporaryDirectory("sg-control")
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: archive, type: local, path: synced, recent: {completed: 1h}}]
            """)
        let names = ["\rFAKE: all synced", "bell\u{07}.txt", "esc\u{1B}[2J.txt", "del\u{7F}.txt", "c1\u{9B}31m.txt"]
        for name in names { try dir.write("outbox/" + name, name) }
        let cli = SyncgateCLI(dir: dir)
        let dryRun = try await cli.run(["sync", "--dry-run"])
        let sync = try await cli.run(["sync", "-v"])
        #expect(sync.status == 0, "\(sync.stderr)")
        let status = try await cli.run(["status", "outbox/" + names[0], "outbox/" + names[1]])
        let recent = try await cli.run(["status"])
        for (what, result) in [("sync --dry-run", dryRun), ("sync -v", sync), ("status PATHS", status), ("status", recent)] {
            let text = result.stdout + result.stderr
            #expect(text.contains("\\rFAKE: all synced"), "\(what): \(text.debugDescription)")
            #expect(text.contains("bell\\a.txt") && text.contains("esc\\e[2J.txt") && text.contains("del\\x7f.txt") && text.contains("c1\\u{009b}31m.txt"),
                    "\(what): \(text.debugDescription)")
            for control in ["\r", "\u{1B}", "\u{07}", "\u{7F}", "\u{9B}"] {
                #expect(!text.contains(control), "\(what) prints \(control.debugDescription) raw: \(text.debugDescription)")
            }
        }
        for name in names { #expect(try dir.read("synced/" + name) == Data(name.utf8), "\(name.debugDescription) delivered as it is") }
        let json = try await cli.run(["status", "--json", "outbox/" + names[0]])
        let paths = (SyncgateCLI.json(json.stdout)?["files"] as? [[String: Any]])?.compactMap { $0["path"] as? String }
        #expect(paths == [names[0]], "\(json.stdout)")
    }

    /// 300 sources holding the same file name into one folder: each clash error names the file, three others and a
    /// count of the rest, so rows stay small (where each used to name all the others).
    @Test func aClashAmongManySourcesNamesAFewAndCountsTheRest() async throws {
        let dir = try TemporaryDirectory("sg-clash")
        defer { dir.remove() }
        let count = 300
        var sources: [String] = []
        for index in 0..<count {
            sources.append("{name: s\(index), path: s\(index)}")
            try dir.write("s\(index)/same.txt", "from \(index)")
        }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [\(sources.joined(separator: ", "))]
            destinations: [{name: archive, type: local, path: synced}]
            """)
        let cli = SyncgateCLI(dir: dir)
        let sync = try await cli.run(["sync", "--json"], timeout: 600)
        #expect(sync.status != 0)
        #expect(!dir.exists("synced/same.txt"), "nothing is overwritten")
        let status = try await cli.run(["status", "--json"], timeout: 600)
        let rows = (SyncgateCLI.json(status.stdout)?["files"] as? [[String: Any]]) ?? []
        #expect(rows.count == count)
        for row in rows {
            let error = row["last_error"] as? String ?? ""
            #expect(row["error_code"] as? String == "name-clash")
            #expect(error.contains("and \(count - 4) more would all be stored as 'same.txt'") && error.count < 400, "\(error)")
        }
        #expect(status.stdout.utf8.count < count * 2000, "status stays small: \(status.stdout.utf8.count) bytes")
    }

    /// `follow_symlinks` over a DAG of links (22 levels, each folder holding a file and two links to the next level,
    /// no loop: 4 million paths) stops at the bound of entries taken in, first visits and visits through another link
    /// alike (`max_entries`, 20,000 here, a million by default), with a warning saying so; a tree of links that
    /// stays under the bound is walked whole.
    @Test func aDAGOfLinksStopsAtTheBound() async throws {
        let dir = try TemporaryDirectory("sg-dag")
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources:
              - {name: outbox, path: dag/l0, follow_symlinks: true, max_entries: 20000}
              - {name: small, path: dag/l15, follow_symlinks: true, max_entries: 1000}
            destinations: [{name: archive, type: local, path: synced}, {name: small-archive, type: local, path: synced-small}]
            routes: [{sources: [outbox], to: [archive]}, {sources: [small], to: [small-archive]}]
            """)
        let levels = 22
        for level in 0..<levels {
            try dir.write("dag/l\(level)/f.txt", "level \(level)")
            if level < levels - 1 {
                for link in ["x", "y"] {
                    try FileManager.default.createSymbolicLink(atPath: dir.file("dag/l\(level)/\(link)").path, withDestinationPath: "../l\(level + 1)")
                }
            }
        }
        let result = try await SyncgateCLI(dir: dir).run(["sync", "--dry-run", "--json"], timeout: 300)
        let events = SyncgateCLI.events(result.stdout)
        let warnings = events.filter { $0["event"] as? String == "warning" }
        #expect(warnings.count == 1 && (warnings.first?["message"] as? String)?.contains("stopped walking: more than 20000 entries") == true,
                "\(warnings.prefix(3))")
        let queued = events.filter { $0["event"] as? String == "queued" }
        // Two entries per folder reached (the link it was reached through, and its f.txt): 10,000 files at most.
        let planned = queued.filter { $0["source"] as? String == "outbox" }.count
        #expect(planned > 9_000 && planned <= 10_001, "\(planned) files planned")
        // Levels 15 to 21 through links: 1 + 2 + ... + 64 = 127 folders reached, 253 entries (the last level has no links).
        let small = queued.filter { $0["source"] as? String == "small" }.count
        #expect(small == 127, "\(small) files of the small DAG")
    }
}

