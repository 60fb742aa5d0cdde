import Foundation
import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport
import Testing

/// Issue 14: the local destination's errors carry the right scope. A full or vanished file system makes the
/// destination unavailable, a read-only one or a folder that cannot be made or used blocks it, and a problem of one
/// file's path stays that file's. The table is tried directly with errno values (a full disk, a read-only mount or
/// a vanished disk cannot be made here without mounting); the situations that root can produce are tried on the
/// plugin itself.
@Suite("local destination: error scopes")
struct LocalErrnoTests {
    static let unavailable = Classification(.retryable(), scope: .destination)
    static let blocked = Classification(.permanent, scope: .destination)
    static let fileRetryable = Classification(.retryable())
    static let filePermanent = Classification(.permanent)

    struct Case: Sendable, CustomStringConvertible {
        var code: Int32
        var place: LocalErrno.Place
        var rootAnswers = true
        var expected: Classification
        var description: String { "\(LocalErrno.name(of: code)) at \(place)\(rootAnswers ? "" : ", root gone") -> \(expected)" }
    }

    static let cases: [Case] = [
        // Full: the destination waits, pending, for room.
        Case(code: ENOSPC, place: .file, expected: unavailable),
        Case(code: EDQUOT, place: .inRoot, expected: unavailable),
        Case(code: ENOSPC, place: .root, expected: unavailable),
        // The file system is gone.
        Case(code: ENODEV, place: .root, expected: unavailable),
        Case(code: ESTALE, place: .file, expected: unavailable),
        Case(code: ENOTCONN, place: .file, expected: unavailable),
        Case(code: EIO, place: .root, expected: unavailable),
        Case(code: EIO, place: .file, rootAnswers: false, expected: unavailable),
        Case(code: ENOENT, place: .inRoot, rootAnswers: false, expected: unavailable),
        // An I/O error while the root still answers is this file's, and may pass; so is a folder removed under it.
        Case(code: EIO, place: .file, expected: fileRetryable),
        Case(code: ENOENT, place: .file, expected: fileRetryable),
        // Read-only, or a folder syncgate may not make or write in: a setting to fix.
        Case(code: EROFS, place: .file, expected: blocked),
        Case(code: EROFS, place: .root, expected: blocked),
        Case(code: EACCES, place: .root, expected: blocked),
        Case(code: EPERM, place: .root, expected: blocked),
        Case(code: EACCES, place: .inRoot, expected: blocked),
        Case(code: ENOTDIR, place: .root, expected: blocked),
        Case(code: ELOOP, place: .root, expected: blocked),
        Case(code: ENAMETOOLONG, place: .root, expected: blocked),
        // One file's path: that file fails, the others go on.
        Case(code: EACCES, place: .file, expected: filePermanent),
        Case(code: EPERM, place: .file, expected: filePermanent),
        Case(code: ENAMETOOLONG, place: .file, expected: filePermanent),
        Case(code: ENAMETOOLONG, place: .inRoot, expected: filePermanent),
        Case(code: ENOTDIR, place: .inRoot, expected: filePermanent),
        Case(code: EISDIR, place: .file, expected: filePermanent),
        Case(code: EFBIG, place: .file, expected: filePermanent),
        // This process is short of something for a moment.
        Case(code: EMFILE, place: .file, expected: fileRetryable),
        Case(code: EINTR, place: .inRoot, expected: fileRetryable),
        Case(code: EBUSY, place: .file, expected: fileRetryable),
    ]

    @Test(arguments: cases)
    func errnoAndPlaceGiveClassAndScope(_ c: Case) {
        #expect(LocalErrno.classification(of: c.code, at: c.place, rootAnswers: c.rootAnswers) == c.expected)
        let error = LocalErrno.error(c.code, "doing it", at: c.place, rootAnswers: c.rootAnswers)
        #expect(error.classification == c.expected)
        #expect(error.code == LocalErrno.name(of: c.code))
        #expect(error.message == "doing it: " + String(cString: strerror(c.code)))
    }

    // MARK: - On the plugin

    static func item(_ dir: TemporaryDirectory, _ relative: String, content: String = "data") throws -> UploadItem {
        let source = try dir.write("src/item-\(UUID().uuidString.prefix(6))", content)
        let stat = try #require(FileStat.of(source.path))
        return UploadItem(source: "s", relativePath: relative, absolutePath: source.path, remoteName: relative, size: stat.size,
                          modificationTime: stat.modificationTime, sha256: "", isArtwork: false)
    }

    static func error(_ body: () async throws -> Void) async -> DestinationError? {
        do {
            try await body()
            return nil
        } catch let error as DestinationError {
            return error
        } catch {
            Issue.record("not a DestinationError: \(error)")
            return nil
        }
    }

    @Test func aFileWhereTheDestinationFolderShouldBeBlocksTheDestination() async throws {
        let dir = try TemporaryDirectory("sg-local-scope")
        defer { dir.remove() }
        try dir.write("dst", "a file, not a folder")
        for root in [dir.file("dst").path, dir.file("dst/below").path] {
            let destination = LocalDestination(root: root)
            let upload = await Self.error { _ = try await destination.upload(try Self.item(dir, "a.txt")) { _ in } }
            #expect(upload?.classification == Self.blocked, "\(root): \(String(describing: upload))")
            #expect(upload?.code == "ENOTDIR")
            #expect(upload?.message.contains(root) == true)
            let probe = await Self.error { try await destination.probe() }
            #expect(probe?.classification == Self.blocked)
            let listing = await Self.error { _ = try await destination.list() }
            #expect(listing?.classification == Self.blocked)
        }
        #expect(try dir.read("dst") == Data("a file, not a folder".utf8), "left as it was")
    }

    @Test func aNameLongerThanNameMaxFailsThatFileAlone() async throws {
        let dir = try TemporaryDirectory("sg-local-scope")
        defer { dir.remove() }
        let destination = LocalDestination(root: dir.file("dst").path)
        let long = String(repeating: "n", count: 300)
        for name in [long + ".txt", long + "/a.txt", "ok/" + long] {
            let error = await Self.error { _ = try await destination.upload(try Self.item(dir, name)) { _ in } }
            #expect(error?.classification == Self.filePermanent, "\(name.prefix(20)): \(String(describing: error))")
            #expect(error?.code == "ENAMETOOLONG")
        }
        // A name of 255 bytes in a script of four-byte characters still gets a temporary file within NAME_MAX.
        let wide = String(repeating: "\u{1F697}", count: 63) + "abc"
        #expect(wide.utf8.count == 255)
        _ = try await destination.upload(try Self.item(dir, "ok/" + wide, content: "car")) { _ in }
        _ = try await destination.upload(try Self.item(dir, "fine.txt", content: "fine")) { _ in }
        #expect(try dir.read("dst/fine.txt") == Data("fine".utf8))
        #expect(try dir.read("dst/ok/" + wide) == Data("car".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("dst").path).sorted() == ["fine.txt", "ok"], "no temporary file left")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("dst/ok").path) == [wide])
    }

    @Test func somethingInTheWayFailsThatFileAlone() async throws {
        let dir = try TemporaryDirectory("sg-local-scope")
        defer { dir.remove() }
        try dir.write("dst/plain", "a file where a folder is needed")
        try FileManager.default.createDirectory(at: dir.file("dst/folder.txt"), withIntermediateDirectories: true)
        let destination = LocalDestination(root: dir.file("dst").path)
        let folderInTheWay = await Self.error { _ = try await destination.upload(try Self.item(dir, "plain/a.txt")) { _ in } }
        #expect(folderInTheWay?.classification == Self.filePermanent)
        #expect(folderInTheWay?.code == "not-a-folder")
        #expect(folderInTheWay?.message.contains("dst/plain is a file, not a folder") == true, "\(String(describing: folderInTheWay))")
        let fileInTheWay = await Self.error { _ = try await destination.upload(try Self.item(dir, "folder.txt")) { _ in } }
        #expect(fileInTheWay?.classification == Self.filePermanent)
        #expect(fileInTheWay?.code == "not-a-file")
        let deleteFolder = await Self.error { try await destination.delete(remoteName: "folder.txt") }
        #expect(deleteFolder?.code == "not-a-file")
        #expect(try dir.read("dst/plain") == Data("a file where a folder is needed".utf8))
        #expect(FileManager.default.fileExists(atPath: dir.file("dst/folder.txt").path))
        try await destination.probe()  // the destination itself is fine
    }

    @Test func theDestinationFolderRemovedDuringARunMakesItUnavailable() async throws {
        let dir = try TemporaryDirectory("sg-local-scope")
        defer { dir.remove() }
        let destination = LocalDestination(root: dir.file("dst").path)
        _ = try await destination.upload(try Self.item(dir, "a/one.txt")) { _ in }
        _ = try await destination.upload(try Self.item(dir, "root.txt")) { _ in }
        // A subfolder removed while the run holds it open is looked up again: the file goes.
        try FileManager.default.removeItem(at: dir.file("dst/a"))
        _ = try await destination.upload(try Self.item(dir, "a/two.txt", content: "two")) { _ in }
        #expect(try dir.read("dst/a/two.txt") == Data("two".utf8))
        // The destination folder itself removed (a disk unmounted, a folder deleted): the destination is away, and
        // no folder is made again where it was during this run.
        try FileManager.default.removeItem(at: dir.file("dst"))
        for name in ["three.txt", "b/three.txt"] {
            let error = await Self.error { _ = try await destination.upload(try Self.item(dir, name)) { _ in } }
            #expect(error?.classification == Self.unavailable, "\(name): \(String(describing: error))")
            #expect(error?.message.contains("gone or was replaced") == true)
        }
        #expect(!FileManager.default.fileExists(atPath: dir.file("dst").path))
        // The next run probes: the folder is made again and used.
        await destination.finish()
        try await destination.probe()
        _ = try await destination.upload(try Self.item(dir, "b/three.txt", content: "3")) { _ in }
        #expect(try dir.read("dst/b/three.txt") == Data("3".utf8))
    }

    @Test func probeMakesAMissingFolderAndFollowsALinkedOne() async throws {
        let dir = try TemporaryDirectory("sg-local-scope")
        defer { dir.remove() }
        let missing = LocalDestination(root: dir.file("new/deeper/dst").path)
        try await missing.probe()
        var isFolder: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: dir.file("new/deeper/dst").path, isDirectory: &isFolder) && isFolder.boolValue)
        try FileManager.default.createDirectory(at: dir.file("disk/backup"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir.file("linked").path, withDestinationPath: dir.file("disk/backup").path)
        let linked = LocalDestination(root: dir.file("linked").path)
        try await linked.probe()
        _ = try await linked.upload(try Self.item(dir, "x/y.txt", content: "y")) { _ in }
        #expect(try dir.read("disk/backup/x/y.txt") == Data("y".utf8))
        #expect(try await linked.list().names == ["x/y.txt"])
    }
}
