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
}
