import Foundation
@testable import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport
import Testing

/// What syncgate writes inside a source (a local destination's folder, its state) is never walked; a local
/// destination whose folder is a source routed to it, or holds one, is a located config error. Decided on the folders
/// as they are on disk: through links, and for folders not made yet.
@Suite("a source never walks syncgate's own folders and files")
struct OwnPathsTests {
    let dir: TemporaryDirectory
    let registry = PluginRegistry([LocalDestination.registration])

    init() throws {
        dir = try TemporaryDirectory("sg-own-paths")
        try dir.write("src/a.txt", "a")
    }

    func load(_ text: String, environment: [String: String] = [:]) throws -> GatewayConfig {
        try dir.write("plugins.yaml", text)
        return try GatewayConfig.load(path: dir.file("plugins.yaml").path, registry: registry, environment: environment)
    }

    func error(_ text: String) -> ConfigError? {
        do {
            _ = try load(text)
            return nil
        } catch let error as ConfigError {
            return error
        } catch {
            Issue.record("unexpected error: \(error)")
            return nil
        }
    }

    /// One source `s` (`src`) and the local destinations given (`name: path`), every file routed to `routedTo`.
    func config(_ destinations: [(String, String)], routedTo: [String]? = nil, source: String = "src", extra: String = "") -> String {
        """
        version: 1
        \(extra)
        sources:
          - name: s
            path: \(source)
          - name: other
            path: other
        destinations:
        \(destinations.map { "  - name: \($0.0)\n    type: local\n    path: \($0.1)" }.joined(separator: "\n"))
        routes:
          - sources: [s]
            to: [\((routedTo ?? destinations.map(\.0)).joined(separator: ", "))]
        """
    }

    @Test func aDestinationFolderInsideARoutedSourceIsNeverWalked() throws {
        try dir.write("other/keep", "")
        // Not made yet: judged as it will be made.
        let config = try load(config([("d", "src/copy/nested")]))
        let source = try #require(config.sources.first { $0.name == "s" })
        #expect(source.own.folders.map(\.path) == ["copy/nested"])
        #expect(source.skipsFolder("copy/nested"))
        #expect(!source.skipsFolder("copy"), "only the destination's own folder")
        #expect(!source.selects("copy/nested/a.txt"))
        #expect(source.selects("copy/b.txt"))
        #expect(config.sources.first { $0.name == "other" }?.own.isEmpty == true)
    }

    @Test func aDestinationInsideASourceNotRoutedToItIsWalked() throws {
        // `other` holds d's folder but sends nothing to d: its files there are its own to send elsewhere.
        try dir.write("other/keep", "")
        let config = try load("""
            version: 1
            sources:
              - {name: s, path: src}
              - {name: other, path: other}
            destinations:
              - {name: d, type: local, path: other/copies}
              - {name: e, type: local, path: elsewhere}
            routes:
              - {sources: [s], to: [d]}
              - {sources: [other], to: [e]}
            """)
        #expect(config.sources.allSatisfy { $0.own.isEmpty }, "\(config.sources.map(\.own))")
    }

    @Test func aDestinationThatIsTheSourceOrHoldsItIsAConfigError() throws {
        try dir.write("other/keep", "")
        let same = try #require(error(config([("d", "src")])))
        #expect(same.line == 11 && same.column == 11, "\(same)")
        #expect(same.keyPath == "destinations[0].path")
        #expect(same.message.contains("is the folder of source 's'"), "\(same.message)")
        let holds = try #require(error(config([("d", ".")])))
        #expect(holds.keyPath == "destinations[0].path")
        #expect(holds.message.contains("holds source 's' (at src)"), "\(holds.message)")
        // The same through a link: the folder on disk decides, not how the path is spelt.
        try FileManager.default.createSymbolicLink(atPath: dir.file("alias").path, withDestinationPath: dir.file("src").path)
        let linked = try #require(error(config([("d", "alias")])))
        #expect(linked.message.contains("is the folder of source 's'"), "\(linked.message)")
        // Written into by a destination that only the other source is routed to: no copy of s's files goes there.
        let chained = try load("""
            version: 1
            sources:
              - {name: s, path: src}
              - {name: other, path: other}
            destinations:
              - {name: d, type: local, path: src}
              - {name: e, type: local, path: elsewhere}
            routes:
              - {sources: [other], to: [d]}
              - {sources: [s], to: [e]}
            """)
        #expect(chained.sources.allSatisfy { $0.own.isEmpty })
    }

    @Test func twoDestinationsInOneFolderAreAConfigError() throws {
        try dir.write("other/keep", "")
        try dir.write("shared/old.txt", "")
        try FileManager.default.createSymbolicLink(atPath: dir.file("shared-link").path, withDestinationPath: dir.file("shared").path)
        // The same folder (through a link), and the same folder not made yet.
        for (first, second) in [("shared", "shared-link"), ("new/out", "new/./out")] {
            let refused = try #require(error(config([("d1", first), ("d2", second)])), "\(first), \(second)")
            #expect(refused.keyPath == "destinations[1].path")
            #expect(refused.message.contains("is also the folder of destination 'd1'"), "\(refused.message)")
        }
        // A folder inside another's is allowed (a site and its uploads folder).
        #expect(error(config([("d1", "site"), ("d2", "site/uploads")])) == nil)
    }

    @Test func aDestinationReachedThroughALinkIntoTheSourceIsFound() throws {
        try dir.write("other/keep", "")
        try dir.write("src/archive/old.txt", "old")
        try FileManager.default.createSymbolicLink(atPath: dir.file("archive-link").path, withDestinationPath: dir.file("src/archive").path)
        let config = try load(config([("d", "archive-link/copies")]))
        #expect(config.sources.first { $0.name == "s" }?.own.folders.map(\.path) == ["archive/copies"])
    }

    @Test func theDefaultStateFolderInASourceIsNeverWalked() throws {
        try dir.write("other/keep", "")
        let config = try load(config([("d", "out")], source: "."))
        let source = try #require(config.sources.first { $0.name == "s" })
        #expect(source.own.folders.map(\.path) == [".syncgate", "out"])
        #expect(source.own.folders.map(\.owner) == ["syncgate's state", "destination d's folder"])
        #expect(!source.selects(".syncgate/state.sqlite-wal"))
        #expect(source.selects("src/a.txt"))
    }

    @Test func aStateFileElsewhereInASourceIsPassedOverByName() throws {
        try dir.write("other/keep", "")
        let config = try load(config([("d", "out")], source: ".", extra: "state: data/ledger.sqlite"))
        let own = try #require(config.sources.first { $0.name == "s" }?.own)
        #expect(own.folders.map(\.path) == ["out"], "data/ may hold the user's files")
        for name in ["ledger.sqlite", "ledger.sqlite-wal", "ledger.sqlite-shm", "ledger.sqlite-journal", "ledger.sqlite.lock"] {
            #expect(own.holdsFile("data/" + name), "\(name)")
        }
        #expect(own.holdsFile("data/token-0123abcd.json"), "a cached token beside the state")
        #expect(!own.holdsFile("data/ledger.sqlite.bak"))
        #expect(!own.holdsFile("data/token-0123abcd.json.txt"))
        #expect(!own.holdsFile("data/sub/token-0123abcd.json"))
        #expect(!own.holdsFile("token-0123abcd.json"))
        #expect(!own.holdsFile("ledger.sqlite"), "the same name in another folder is the user's")
    }

    @Test func aSecretFileInAnySourceIsNeverSent() throws {
        try dir.write("other/keep", "")
        try dir.write("src/keys/http-token", "a-token-of-sixteen-or-more")
        try dir.write("src/keys/notes.txt", "not a secret")
        // `other` is not routed anywhere near the key: a secret is passed over by every source that holds it.
        let config = try load(config([("d", "out")], source: ".", extra: "http: {listen: 127.0.0.1:9464, token_file: src/keys/http-token}"))
        let here = try #require(config.sources.first { $0.name == "s" })
        #expect(here.own.files.contains { $0.path == "src/keys/http-token" && $0.owner == "a secret the config reads" }, "\(here.own)")
        #expect(!here.selects("src/keys/http-token"))
        #expect(here.selects("src/keys/notes.txt"))
        let withOther = try load("""
            version: 1
            http: {listen: 127.0.0.1:9464, token_file: src/keys/http-token}
            sources: [{name: s, path: src}, {name: other, path: other}]
            destinations: [{name: d, type: local, path: out}]
            routes: [{sources: [other], to: [d]}]
            """)
        #expect(withOther.sources.first { $0.name == "s" }?.own.files.map(\.path) == ["keys/http-token"])
        #expect(SourceScanner().scan(try #require(withOther.sources.first { $0.name == "s" })).files.map(\.relativePath) == ["a.txt", "keys/notes.txt"])
    }

    @Test func aLinkIntoTheDestinationFolderIsNotFollowedThere() throws {
        // The destination is outside the source, but the source follows links and one leads into the destination's
        // folder: walked, each sync would send the copies again under archive/, one folder deeper.
        try dir.write("other/keep", "")
        try dir.write("out/a.txt", "a copy")
        try dir.write("src/real/b.txt", "b")
        try FileManager.default.createSymbolicLink(atPath: dir.file("src/archive").path, withDestinationPath: "../out")
        try FileManager.default.createSymbolicLink(atPath: dir.file("src/also-real").path, withDestinationPath: "real")
        let config = try load("""
            version: 1
            sources: [{name: s, path: src, follow_symlinks: true}, {name: other, path: other}]
            destinations: [{name: d, type: local, path: out}]
            routes: [{sources: [s], to: [d]}]
            """)
        let source = try #require(config.sources.first { $0.name == "s" })
        #expect(SourceScanner().scan(source).files.map(\.relativePath) == ["a.txt", "also-real/b.txt", "real/b.txt"])
        #expect(SourceScanner().file(at: "archive/a.txt", in: source) == nil)
        #expect(SourceScanner().file(at: "also-real/b.txt", in: source) != nil)
    }

    @Test func theConfigIsNeverSentWhenASecretIsWrittenInIt() throws {
        try dir.write("other/keep", "")
        let written = try load(config([("d", "out")], source: ".", extra: "http: {listen: 127.0.0.1:9464, token: an-inline-token-of-20}"))
        let own = try #require(written.sources.first { $0.name == "s" }?.own)
        #expect(own.files.contains { $0.path == "plugins.yaml" && $0.owner == "the config, a secret is written in it" }, "\(own)")
        // A secret from the environment is not in the file: the config is the user's to send.
        let fromEnvironment = try load(config([("d", "out")], source: ".", extra: "http: {listen: 127.0.0.1:9464, token: \"${TOK}\"}"),
                                       environment: ["TOK": "a-token-from-the-environment"])
        #expect(fromEnvironment.sources.first { $0.name == "s" }?.own.holdsFile("plugins.yaml") == false)
        #expect(!Secret.isWritten("${TOK}") && !Secret.isWritten("${A}${B}") && !Secret.isWritten(""))
        #expect(Secret.isWritten("x${TOK}") && Secret.isWritten("${TOK}x") && Secret.isWritten("plain") && Secret.isWritten("${unclosed"))
    }

    @Test func theWalkPassesOverOwnFoldersAndFiles() throws {
        try dir.write("other/keep", "")
        try dir.write("src/copy/a.txt", "a copy")
        try dir.write("src/sub/b.txt", "b")
        try dir.write("src/ledger.sqlite", "state")
        try dir.write("src/ledger.sqlite-wal", "state")
        try dir.write("src/ledger.sqlite.bak", "the user's")
        let config = try load(config([("d", "src/copy")], extra: "state: src/ledger.sqlite"))
        let source = try #require(config.sources.first { $0.name == "s" })
        let walked = SourceScanner().scan(source).files.map(\.relativePath)
        #expect(walked == ["a.txt", "ledger.sqlite.bak", "sub/b.txt"])
        // Asked for one file by its path (a `run`'s watch, `sync PATH`), the same.
        #expect(SourceScanner().file(at: "copy/a.txt", in: source) == nil)
        #expect(SourceScanner().file(at: "ledger.sqlite-wal", in: source) == nil)
        #expect(SourceScanner().file(at: "sub/b.txt", in: source) != nil)
    }
}
