import Foundation
@testable import SyncgateCore
import SyncgateTestSupport
import Testing

/// The unlink of a move (``AfterSyncMover/unlink(_:below:expected:)``) and the overlap of source folders
/// (``SourceOverlaps``), on real folders: the attack of a folder swapped for a link, between the check and the
/// unlink, to a folder outside the source that holds a hard link of the same file (same inode, size and times).
@Suite("after_sync unlink and overlapping sources")
struct AfterSyncUnlinkTests {
    let dir: TemporaryDirectory

    init() throws { dir = try TemporaryDirectory("sg-unlink") }

    @Test func aFolderSwappedForALinkBetweenCheckAndUnlinkUnlinksNothing() throws {
        defer { dir.remove() }
        try dir.write("src/sub/x.txt", "x-ray")
        try FileManager.default.createDirectory(at: dir.file("outside"), withIntermediateDirectories: true)
        #expect(link(dir.file("src/sub/x.txt").path, dir.file("outside/x.txt").path) == 0)
        // The identity the move checked and hashed (after the hard link was made: the same inode, size and times).
        let expected = try #require(FileIdentity(path: dir.file("src/sub/x.txt").path))
        #expect(FileIdentity(path: dir.file("outside/x.txt").path) == expected)
        // Then the folder is swapped for a link to the outside folder.
        try FileManager.default.moveItem(at: dir.file("src/sub"), to: dir.file("parked"))
        try FileManager.default.createSymbolicLink(atPath: dir.file("src/sub").path, withDestinationPath: dir.file("outside").path)
        let outcome = AfterSyncMover.unlink("sub/x.txt", below: BeneathRoot(root: dir.file("src").path), expected: expected)
        #expect(outcome == .link("sub"))
        #expect(try dir.read("outside/x.txt") == Data("x-ray".utf8), "the hard link outside the source was unlinked")
        #expect(try dir.read("parked/x.txt") == Data("x-ray".utf8))
    }

    @Test func theFileItselfSwappedForALinkIsNotUnlinked() throws {
        defer { dir.remove() }
        try dir.write("src/x.txt", "x-ray")
        let expected = try #require(FileIdentity(path: dir.file("src/x.txt").path))
        try FileManager.default.moveItem(at: dir.file("src/x.txt"), to: dir.file("x.txt"))
        try FileManager.default.createSymbolicLink(atPath: dir.file("src/x.txt").path, withDestinationPath: dir.file("x.txt").path)
        #expect(AfterSyncMover.unlink("x.txt", below: BeneathRoot(root: dir.file("src").path), expected: expected) == .link("x.txt"))
        #expect(dir.exists("x.txt") && dir.exists("src/x.txt"))
    }

    @Test func theCheckedFileIsUnlinkedAndAChangedOneIsNot() throws {
        defer { dir.remove() }
        try dir.write("src/a/b/x.txt", "x-ray")
        try dir.write("src/a/y.txt", "yankee")
        let root = BeneathRoot(root: dir.file("src").path)
        let x = try #require(FileIdentity(path: dir.file("src/a/b/x.txt").path))
        #expect(AfterSyncMover.unlink("a/b/x.txt", below: root, expected: x) == .deleted)
        #expect(!dir.exists("src/a/b/x.txt") && dir.exists("src/a/b"))
        #expect(AfterSyncMover.unlink("a/b/x.txt", below: root, expected: x) == .alreadyGone)
        let y = try #require(FileIdentity(path: dir.file("src/a/y.txt").path))
        try dir.write("src/a/y.txt", "yankee, rewritten")
        #expect(AfterSyncMover.unlink("a/y.txt", below: root, expected: y) == .changed)
        #expect(dir.exists("src/a/y.txt"))
    }

    @Test func overlappingFoldersAreFoundAndPathsMapped() throws {
        defer { dir.remove() }
        for folder in ["src/sub", "other"] { try FileManager.default.createDirectory(at: dir.file(folder), withIntermediateDirectories: true) }
        try FileManager.default.createSymbolicLink(atPath: dir.file("alias").path, withDestinationPath: dir.file("src").path)
        func source(_ name: String, _ path: String) throws -> SourceConfig {
            SourceConfig(name: name, path: dir.file(path).path, include: try GlobSet(patterns: ["**/*"]), exclude: GlobSet([]))
        }
        let overlaps = SourceOverlaps(sources: [try source("a", "src"), try source("b", "src/sub"), try source("c", "alias"),
                                                try source("d", "other"), try source("e", "missing")])
        #expect(Set(overlaps.pairs.map { "\($0.outer)>\($0.inner):\($0.offset)" }) == ["a>b:sub", "a>c:", "c>b:sub"])
        let fromA = try #require(overlaps.bySource["a"])
        #expect(fromA.first { $0.other == "b" }?.path(inOther: "sub/deep/x.txt") == "deep/x.txt")
        #expect(fromA.first { $0.other == "b" }?.path(inOther: "subway/x.txt") == nil)
        #expect(fromA.first { $0.other == "c" }?.path(inOther: "y.txt") == "y.txt")
        #expect(overlaps.bySource["b"]?.first { $0.other == "a" }?.path(inOther: "x.txt") == "sub/x.txt")
        #expect(overlaps.bySource["d"] == nil && overlaps.bySource["e"] == nil)
    }
}
