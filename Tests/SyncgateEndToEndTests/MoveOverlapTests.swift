import Foundation
import SyncgateTestSupport
import Testing

/// `after_sync: delete` decided per physical file, with the real binary: where source folders overlap (one inside
/// another, or the same folder), a file is moved only once every source that reaches it has delivered it everywhere
/// it routes it; `validate` names such sources; and a move never unlinks through a symbolic link.
@Suite("move with overlapping sources (real binary)")
struct MoveOverlapTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-move-overlap")
        cli = SyncgateCLI(dir: dir)
    }

    /// Source `a` (`src`, after_sync: delete) to the local folder `d1`; source `b` (`bPath`, its keys `bKeys`) to the
    /// local folder `d2`.
    func writeConfig(bPath: String, bKeys: String = "") throws {
        try dir.write("plugins.yaml", """
            version: 1
            sources:
              - {name: a, path: src, after_sync: delete}
              - {name: b, path: \(bPath)\(bKeys)}
            destinations:
              - {name: d1, type: local, path: d1}
              - {name: d2, type: local, path: d2}
            routes:
              - {sources: [a], to: [d1]}
              - {sources: [b], to: [d2]}
            """)
    }

    /// `src/sub/deep/x.txt` reached by both sources fails at d2 (a plain file `d2/deep` stands where its folder must
    /// go): it stays, though d1 holds it; `src/y.txt`, reached by `a` alone, is moved. Once d2 works, `retry`
    /// delivers it there and moves it.
    func checkHeldBackThenMoved(xAtD2: String) async throws {
        try dir.write("src/y.txt", "yankee")
        try dir.write("src/sub/deep/x.txt", "x-ray")
        try dir.write("d2/deep", "in the way")
        let first = try await cli.run(["sync"])
        #expect(first.status == 1, "d2 fails deep/x.txt permanently: \(first.stderr)")
        #expect(try dir.read("d1/sub/deep/x.txt") == Data("x-ray".utf8), "\(first.stderr)")
        #expect(try dir.read("src/sub/deep/x.txt") == Data("x-ray".utf8), "held back: b has not delivered it to d2")
        #expect(try dir.read("d1/y.txt") == Data("yankee".utf8))
        #expect(!dir.exists("src/y.txt"), "reached by a alone, delivered everywhere a routes it: moved")
        #expect(!dir.exists("d2/" + xAtD2))

        try FileManager.default.removeItem(at: dir.file("d2/deep"))
        let retry = try await cli.run(["retry"])
        #expect(retry.status == 0, "\(retry.stderr)")
        #expect(try dir.read("d2/" + xAtD2) == Data("x-ray".utf8))
        #expect(!dir.exists("src/sub/deep/x.txt"), "both sources have delivered it everywhere: moved")
        let again = try await cli.run(["sync", "--json"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(SyncgateCLI.events(again.stdout).last?["uploaded"] as? Int == 0, "\(again.stdout)")
    }

    @Test func aFileInASourceInsideAMovingSourceWaitsForBoth() async throws {
        defer { dir.remove() }
        try writeConfig(bPath: "src/sub")
        try await checkHeldBackThenMoved(xAtD2: "deep/x.txt")
    }

    /// Two sources on one folder, the second named through a link to it (the overlap is found by the folder's
    /// device and inode, not its spelling); `b` selects `sub/**` only, so `y.txt` is `a`'s alone.
    @Test func twoSourcesOnTheSameFolderWaitForEachOther() async throws {
        defer { dir.remove() }
        try FileManager.default.createDirectory(at: dir.file("src"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir.file("alias").path, withDestinationPath: "src")
        try writeConfig(bPath: "alias", bKeys: ", include: [\"sub/**\"]")
        // b names the file sub/deep/x.txt: the blocker stands at d2/sub, not d2/deep.
        try dir.write("src/y.txt", "yankee")
        try dir.write("src/sub/deep/x.txt", "x-ray")
        try dir.write("d2/sub", "in the way")
        let first = try await cli.run(["sync"])
        #expect(first.status == 1, "\(first.stderr)")
        #expect(try dir.read("d1/sub/deep/x.txt") == Data("x-ray".utf8), "\(first.stderr)")
        #expect(try dir.read("src/sub/deep/x.txt") == Data("x-ray".utf8), "held back: b has not delivered it to d2")
        #expect(!dir.exists("src/y.txt"), "b does not select y.txt: a alone decides")
        try FileManager.default.removeItem(at: dir.file("d2/sub"))
        let retry = try await cli.run(["retry"])
        #expect(retry.status == 0, "\(retry.stderr)")
        #expect(try dir.read("d2/sub/deep/x.txt") == Data("x-ray".utf8))
        #expect(!dir.exists("src/sub/deep/x.txt"), "both have delivered it: moved")
    }

    @Test func validateNamesOverlappingSourcesAndWhatAMoveWaitsFor() async throws {
        defer { dir.remove() }
        try FileManager.default.createDirectory(at: dir.file("src/sub"), withIntermediateDirectories: true)
        try writeConfig(bPath: "src/sub")
        var result = try await cli.run(["validate"])
        #expect(result.status == 0, "\(result.stderr)")
        let src = dir.file("src").path, sub = dir.file("src/sub").path
        #expect(result.stdout.contains("notice: sources `a` (\(src)) and `b` (\(sub)) overlap: a file under \(sub) is moved (after_sync: delete) only once both have delivered it everywhere they route it"), "\(result.stdout)")

        try FileManager.default.createSymbolicLink(atPath: dir.file("alias").path, withDestinationPath: "src")
        try writeConfig(bPath: "alias")
        result = try await cli.run(["validate"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("notice: sources `a` and `b` are the same folder (\(src)): a file there is moved (after_sync: delete) only once both have delivered it everywhere they route it"), "\(result.stdout)")

        try FileManager.default.createDirectory(at: dir.file("elsewhere"), withIntermediateDirectories: true)
        try writeConfig(bPath: "elsewhere")
        result = try await cli.run(["validate"])
        #expect(result.status == 0 && !result.stdout.contains("notice:"), "\(result.stdout)")
    }

    /// A source that follows links, whose folder `sub` was delivered, then moved outside the source and replaced by
    /// a link to where it went (the same file, same inode, under the same path through the link): a move does not
    /// unlink through the link, and the file outside stays. Deterministic: the swap is made between two runs.
    @Test func aMoveNeverUnlinksThroughAFolderSwappedForALink() async throws {
        defer { dir.remove() }
        func config(_ afterSync: String) throws {
            try dir.write("plugins.yaml", """
                version: 1
                sources: [{name: a, path: src, follow_symlinks: true, after_sync: \(afterSync)}]
                destinations: [{name: d1, type: local, path: d1}]
                """)
        }
        try config("keep")
        try dir.write("src/y.txt", "yankee")
        try dir.write("src/sub/x.txt", "x-ray")
        #expect(try await cli.run(["sync"]).status == 0)
        try FileManager.default.createDirectory(at: dir.file("outside"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(at: dir.file("src/sub"), to: dir.file("outside/sub"))
        try FileManager.default.createSymbolicLink(atPath: dir.file("src/sub").path, withDestinationPath: dir.file("outside/sub").path)
        try config("delete")
        let result = try await cli.run(["sync", "--json", "-v"])
        #expect(result.status == 0, "held back quietly, not an error: \(result.stderr)")
        #expect(try dir.read("outside/sub/x.txt") == Data("x-ray".utf8), "unlinked through the link")
        #expect(!dir.exists("src/y.txt"), "a file with no link on its path is moved")
        #expect(try dir.read("d1/sub/x.txt") == Data("x-ray".utf8))
    }
}
