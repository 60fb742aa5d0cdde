import Foundation
import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport
import Testing

@Suite("local destination")
struct LocalDestinationTests {
    @Test func writesThroughATemporaryFileListsAndDeletes() async throws {
        let dir = try TemporaryDirectory("sg-local")
        defer { dir.remove() }
        // Over 8 MiB, not a multiple of it: the copy starts its write-back in steps, then ends with a short one.
        let block = Data((0..<253).map { UInt8($0) })
        var content = Data(capacity: 20_000_000)
        while content.count < 20_000_000 { content.append(block) }
        let source = try dir.write("src/a/b.bin", content)
        let stat = try #require(FileStat.of(source.path))
        let destination = LocalDestination(root: dir.file("dst").path)
        let item = UploadItem(source: "s", relativePath: "a/b.bin", absolutePath: source.path,
                              remoteName: try destination.remoteName(forRelativePath: "a/b.bin"), size: stat.size,
                              modificationTime: stat.modificationTime, sha256: try FileHasher.sha256(path: source.path), isArtwork: false)
        let receipt = try await destination.upload(item) { _ in }
        #expect(receipt.remoteName == "a/b.bin")
        #expect(try dir.read("dst/a/b.bin") == (try Data(contentsOf: source)))
        let listing = try await destination.list()
        #expect(listing.names == ["a/b.bin"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("dst/a").path) == ["b.bin"])
        try await destination.delete(remoteName: "a/b.bin")
        #expect(!dir.exists("dst/a/b.bin"))
        await #expect(throws: DestinationError.self) { try await destination.delete(remoteName: "a/b.bin") }
    }

    /// The copy ends at a short read that reaches the planned size, without reading again to meet the end: every
    /// size around the read buffer's edges (the first read asks one byte more than a small file holds, a large one
    /// is read in 1 MiB chunks) arrives whole, with its hash, and a file that grew or shrank since it was planned is
    /// refused whatever its size.
    @Test(arguments: [0, 1, 4095, 4096, 4097, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, (2 << 20) + 5])
    func everySizeArrivesWholeAndAChangedSizeIsRefused(size: Int) async throws {
        let dir = try TemporaryDirectory("sg-local-sizes")
        defer { dir.remove() }
        let content = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        let source = try dir.write("src/f.bin", content)
        let stat = try #require(FileStat.of(source.path))
        let destination = LocalDestination(root: dir.file("dst").path)
        let item = UploadItem(source: "s", relativePath: "f.bin", absolutePath: source.path, remoteName: "f.bin", size: stat.size,
                              modificationTime: stat.modificationTime, sha256: "", isArtwork: false)
        let receipt = try await destination.upload(item) { _ in }
        #expect(try dir.read("dst/f.bin") == content)
        #expect(receipt.sha256 == (try FileHasher.sha256(path: source.path)))
        for (what, changed) in [("grown", content + Data([1])), ("shrunk", content.dropLast(size > 0 ? 1 : 0))] where changed.count != size {
            _ = try dir.write("src/f.bin", changed)
            // The planned modification time kept, so that only the size tells.
            let seconds = stat.modificationTime.timeIntervalSince1970.rounded(.down)
            let planned = timespec(tv_sec: Int(seconds), tv_nsec: Int((stat.modificationTime.timeIntervalSince1970 - seconds) * 1e9))
            #expect(utimensat(AT_FDCWD, source.path, [planned, planned], 0) == 0)
            await #expect(throws: FileChangedError.self, "\(what), \(size) bytes") { _ = try await destination.upload(item) { _ in } }
            #expect(try dir.read("dst/f.bin") == content, "the copy of the planned version stays")
        }
    }

    /// `syncgate check` merges the local listing with the ledger, so it must come in the byte order of the full
    /// names, across folders (`a-b` and `a0` around the folder `a`, `Z` before `a`, `é` last) and across pages, with
    /// what ``LocalDestination/list()`` lists and nothing else (no link, no temporary file).
    @Test func theCheckListingComesInTheByteOrderOfNames() async throws {
        let dir = try TemporaryDirectory("sg-local-order")
        defer { dir.remove() }
        var names = ["a-b", "a/x", "a/y/z", "a/y-", "a0", "Z", "\u{e9}", "b", "a.b/c"]
        names += (0..<2_100).map { "bulk/\($0 % 3)/f\($0)" }
        for name in names { try dir.write("dst/" + name, "x") }
        try FileManager.default.createSymbolicLink(atPath: dir.file("dst/link").path, withDestinationPath: dir.file("dst/b").path)
        try dir.write("dst/a/.syncgate-tmp-partial", "not a copy")
        let destination = LocalDestination(root: dir.file("dst").path)
        #expect(destination.verificationListingIsOrdered)
        var pages: [[RemoteListing.Entry]] = []
        let complete = try await destination.verificationListing(beforeRequest: {}) { pages.append($0) }
        #expect(complete && pages.count == 3 && pages.allSatisfy { $0.count <= 1_000 }, "\(pages.map(\.count))")
        let listed = pages.flatMap { $0.map(\.name) }
        #expect(listed == names.sorted { ExactString.compare($0, $1) < 0 })
        #expect(Set(listed) == Set(try await destination.list().names))
        #expect(pages.joined().allSatisfy { $0.size == 1 && $0.checksum?.hasPrefix("mtime-") == true })
    }

    @Test func replacesACopyByNameOnlyAndNeverThroughALinkPutInItsPlace() async throws {
        let dir = try TemporaryDirectory("sg-local-replace")
        defer { dir.remove() }
        let destination = LocalDestination(root: dir.file("dst").path)
        func item(_ content: String) throws -> UploadItem {
            let source = try dir.write("src/a/b.txt", content)
            let stat = try #require(FileStat.of(source.path))
            return UploadItem(source: "s", relativePath: "a/b.txt", absolutePath: source.path, remoteName: "a/b.txt", size: stat.size,
                              modificationTime: stat.modificationTime, sha256: "", isArtwork: false)
        }
        _ = try await destination.upload(try item("first")) { _ in }
        // Another name for the copy (a hard link outside the folder) keeps the old bytes: the copy is replaced by name.
        #expect(link(dir.file("dst/a/b.txt").path, dir.file("hard-link.txt").path) == 0)
        _ = try await destination.upload(try item("second, longer")) { _ in }
        #expect(try dir.read("dst/a/b.txt") == Data("second, longer".utf8))
        #expect(try dir.read("hard-link.txt") == Data("first".utf8))

        // A link put where the copy is (in the same run, with the folder held open): refused, the target untouched.
        try dir.write("outside.txt", "outside")
        try FileManager.default.removeItem(at: dir.file("dst/a/b.txt"))
        try FileManager.default.createSymbolicLink(atPath: dir.file("dst/a/b.txt").path, withDestinationPath: dir.file("outside.txt").path)
        do {
            _ = try await destination.upload(try item("third")) { _ in }
            Issue.record("a link where the file goes must not be replaced or written through")
        } catch let error as DestinationError {
            #expect(error.code == "symlink" && error.classification == Classification(.permanent), "\(error)")
        }
        #expect(try dir.read("outside.txt") == Data("outside".utf8))
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: dir.file("dst/a/b.txt").path) == dir.file("outside.txt").path)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("dst/a").path) == ["b.txt"], "no temporary file left")
        // Deleting it is refused too; listing does not show it.
        await #expect(throws: DestinationError.self) { try await destination.delete(remoteName: "a/b.txt") }
        #expect(try await destination.list().entries.isEmpty)
        #expect(try dir.read("outside.txt") == Data("outside".utf8))
    }

    @Test func refusesNamesThatEscapeTheFolder() throws {
        let destination = LocalDestination(root: "/tmp/x")
        #expect(throws: DestinationError.self) { try destination.remoteName(forRelativePath: "../etc/passwd") }
        #expect(throws: DestinationError.self) { try destination.remoteName(forRelativePath: "a//b") }
        #expect(try destination.remoteName(forRelativePath: "a b/ü.txt") == "a b/ü.txt")
    }

    @Test func hashIsStreamedSHA256() throws {
        let dir = try TemporaryDirectory("sg-hash")
        defer { dir.remove() }
        let f = try dir.write("x", "abc")
        #expect(try FileHasher.sha256(path: f.path) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}

@Suite("source scanning")
struct SourceScannerTests {
    @Test func skipsLinksSpecialFilesAndHiddenAndReportsThem() throws {
        let dir = try TemporaryDirectory("sg-scan")
        defer { dir.remove() }
        try dir.write("src/a.txt", "a")
        try dir.write("src/.hidden/x.txt", "x")
        try dir.write("src/sub/b.txt", "b")
        try dir.write("outside.txt", "o")
        try FileManager.default.createSymbolicLink(atPath: dir.file("src/link.txt").path, withDestinationPath: dir.file("outside.txt").path)
        try FileManager.default.createSymbolicLink(atPath: dir.file("src/sub/loop").path, withDestinationPath: dir.file("src").path)
        #expect(mkfifo(dir.file("src/pipe").path, 0o644) == 0)
        // A Latin-1 name: skipped, and named with its stray byte shown (not as a replacement character).
        let latin1 = Array(dir.file("src/sub").path.utf8) + Array("/caf".utf8) + [0xE9] + Array(".txt".utf8) + [0]
        let fd = latin1.withUnsafeBufferPointer { $0.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_CREAT | O_WRONLY, 0o644) } }
        #expect(fd >= 0)
        close(fd)
        let source = SourceConfig(name: "s", path: dir.file("src").path, include: try GlobSet(patterns: ["**/*"]), exclude: try GlobSet(patterns: ["**/.*"]))
        let (files, warnings) = SourceScanner().scan(source)
        #expect(files.map(\.relativePath) == ["a.txt", "sub/b.txt"])
        let warned = Set(warnings.map(\.relativePath))
        #expect(warned == ["link.txt", "sub/loop", "pipe", "sub/caf\\xe9.txt"])
        #expect(warnings.first { $0.relativePath == "pipe" }?.message.contains("FIFO") == true)

        var following = source
        following.followSymlinks = true
        let (followed, loopWarnings) = SourceScanner().scan(following)
        #expect(followed.map(\.relativePath) == ["a.txt", "link.txt", "sub/b.txt"])
        #expect(loopWarnings.contains { $0.relativePath == "sub/loop" && $0.message.contains("loop") })
    }
}

@Suite("files that change while they upload")
struct ChangingFileTests {
    @Test(arguments: ["append", "truncate", "replace", "delete"])
    func neverReachTheFolderAsAMixAndAreSentNextRun(_ change: String) async throws {
        let dir = try TemporaryDirectory("sg-change")
        defer { dir.remove() }
        let original = Data(repeating: 0x41, count: 4 << 20)
        let source = try dir.write("src/f.bin", original)
        try dir.write("dst/f.bin", "old copy")
        let stat = try #require(FileStat.of(source.path))
        let item = UploadItem(source: "s", relativePath: "f.bin", absolutePath: source.path, remoteName: "f.bin", size: stat.size,
                              modificationTime: stat.modificationTime, sha256: "planned", isArtwork: false)
        let destination = LocalDestination(root: dir.file("dst").path)
        let changed = ChangeOnce()
        do {
            _ = try await destination.upload(item) { bytes in
                guard bytes >= 1 << 20, changed.first() else { return }
                usleep(10_000)  // the new modification time must differ
                switch change {
                case "append":
                    let handle = try! FileHandle(forWritingTo: source)
                    handle.seekToEndOfFile()
                    handle.write(Data("more".utf8))
                    try! handle.close()
                case "truncate": truncate(source.path, 100)
                case "replace":
                    try! Data(repeating: 0x42, count: 4 << 20).write(to: source.deletingLastPathComponent().appendingPathComponent("new.bin"))
                    rename(source.deletingLastPathComponent().appendingPathComponent("new.bin").path, source.path)
                default: unlink(source.path)
                }
            }
            Issue.record("a changed file must not be reported delivered")
        } catch let error as FileChangedError {
            #expect(error.description.contains("changed while it was being sent"))
        }
        #expect(try dir.read("dst/f.bin") == Data("old copy".utf8), "the old copy stays whole")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("dst").path) == ["f.bin"])
    }
}

final class ChangeOnce: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false
    func first() -> Bool { lock.withLock { defer { done = true }; return !done } }
}
