import Foundation
import SyncgateTestSupport
import Testing

/// A local destination's folder inside a source routed to it, and syncgate's state inside a source, with the real
/// binary: never walked, so a sync does not send its own copies again one folder deeper (or its live state file,
/// which never settles), and a move into a folder inside the source moves each file once. A destination that is a
/// source routed to it is refused at load (exit 78), before anything is touched.
@Suite("syncgate's own folders inside a source (real binary)")
struct OwnFoldersTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-own-folders")
        cli = SyncgateCLI(dir: dir)
    }

    /// Every regular file under `folder`, relative to it, sorted.
    func files(_ folder: String) -> [String] {
        let root = dir.file(folder).path
        let found = FileManager.default.enumerator(atPath: root)?.compactMap { $0 as? String } ?? []
        return found.filter { path in
            var isFolder: ObjCBool = false
            return FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isFolder) && !isFolder.boolValue
        }.sorted()
    }

    func uploaded(_ result: ProcessResult) -> Int? { SyncgateCLI.events(result.stdout).last?["uploaded"] as? Int }

    @Test func aDestinationInsideTheSourceGetsNoCopiesOfItsCopies() async throws {
        defer { dir.remove() }
        try dir.write("src/a/one.txt", "one")
        try dir.write("src/two.txt", "two")
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: s, path: src}]
            destinations: [{name: d, type: local, path: src/copy}]
            """)
        let validate = try await cli.run(["validate"])
        #expect(validate.status == 0, "\(validate.stderr)")
        #expect(validate.stdout.contains("passed over (syncgate's own): copy/ (destination d's folder)"), "\(validate.stdout)")
        for run in 1...3 {
            let sync = try await cli.run(["sync", "--json"])
            #expect(sync.status == 0, "run \(run): \(sync.stderr)")
            #expect(uploaded(sync) == (run == 1 ? 2 : 0), "run \(run): \(sync.stdout)")
        }
        #expect(files("src") == ["a/one.txt", "copy/a/one.txt", "copy/two.txt", "two.txt"])
        // A file written into the destination's folder by hand is not the source's either.
        try dir.write("src/copy/by-hand.txt", "by hand")
        let again = try await cli.run(["sync", "--json"])
        #expect(uploaded(again) == 0, "\(again.stdout)")
        #expect(!dir.exists("src/copy/copy"))
        // Asked about, a copy says why no sync has it.
        let status = try await cli.run(["status", "src/copy/two.txt"])
        #expect(status.status == 1)
        #expect(status.stderr.contains("src/copy/two.txt (copy/two.txt in its source): syncgate's own (destination d's folder): no source sends it"), "\(status.stderr)")
    }

    @Test func aMoveIntoAFolderInsideTheSourceMovesEachFileOnce() async throws {
        defer { dir.remove() }
        try dir.write("inbox/a.txt", "alpha")
        try dir.write("inbox/sub/b.txt", "bravo")
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: in, path: inbox, after_sync: delete}]
            destinations: [{name: done, type: local, path: inbox/done}]
            """)
        let first = try await cli.run(["sync"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(files("inbox") == ["done/a.txt", "done/sub/b.txt"], "moved into done/, once")
        try dir.write("inbox/c.txt", "charlie")
        for _ in 1...2 {
            let sync = try await cli.run(["sync"])
            #expect(sync.status == 0, "\(sync.stderr)")
        }
        #expect(files("inbox") == ["done/a.txt", "done/c.txt", "done/sub/b.txt"], "nothing moved again, nothing deleted from done/")
        #expect(try dir.read("inbox/done/c.txt") == Data("charlie".utf8))
    }

    @Test func theStateInsideTheSourceIsNotSent() async throws {
        defer { dir.remove() }
        // The source is the config's own folder, which holds the state (`.syncgate/`) by default.
        try dir.write("one.txt", "one")
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: here, path: .}]
            destinations: [{name: d, type: local, path: out}]
            """)
        for run in 1...2 {
            let sync = try await cli.run(["sync", "--json"])
            // Sent, the live state file would change under each run and never settle: exit 75 every time.
            #expect(sync.status == 0, "run \(run): \(sync.stderr)")
        }
        #expect(files("out") == ["one.txt", "plugins.yaml"])
    }

    @Test func aSecretFileInTheSourceIsNotSent() async throws {
        defer { dir.remove() }
        try dir.write("src/report.csv", "a,b")
        try dir.write("src/secrets/s3-key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
        try dir.write("plugins.yaml", """
            version: 1
            http: {listen: 127.0.0.1:9464, token_file: src/secrets/s3-key}
            sources: [{name: s, path: src}]
            destinations: [{name: d, type: local, path: out}]
            """)
        let validate = try await cli.run(["validate"])
        #expect(validate.stdout.contains("passed over (syncgate's own): secrets/s3-key (a secret the config reads)"), "\(validate.stdout)")
        let sync = try await cli.run(["sync"])
        #expect(sync.status == 0, "\(sync.stderr)")
        #expect(files("out") == ["report.csv"])
        // The config itself once a secret is written in it.
        try dir.write("src/plugins.yaml", """
            version: 1
            http: {listen: 127.0.0.1:9464, token: written-here-and-long-enough}
            sources: [{name: s, path: .}]
            destinations: [{name: d, type: local, path: ../out}]
            """)
        var inSource = cli
        inSource.environment["SYNCGATE_CONFIG"] = dir.file("src/plugins.yaml").path
        let again = try await inSource.run(["sync"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(files("out") == ["report.csv", "secrets/s3-key"], "the token file is no secret of this config; the config is")
    }

    @Test func aDestinationThatIsTheSourceIsRefusedBeforeAnythingIsTouched() async throws {
        defer { dir.remove() }
        try dir.write("src/precious.txt", "precious")
        try dir.write("plugins.yaml", """
            version: 1
            sources:
              - name: s
                path: src
                after_sync: delete
            destinations:
              - name: d
                type: local
                path: src
            """)
        for command in [["validate"], ["sync"]] {
            let result = try await cli.run(command)
            #expect(result.status == 78, "\(command): \(result.stderr)")
            #expect(result.stderr.contains("plugins.yaml:9:11: destinations[0].path: "), "\(command): \(result.stderr)")
            #expect(result.stderr.contains("is the folder of source 's', which is routed to this destination"), "\(result.stderr)")
        }
        #expect(try dir.read("src/precious.txt") == Data("precious".utf8))
        #expect(files("src") == ["precious.txt"])
    }
}
