import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// A state file deleted or replaced after a run's last write is found when the run ends
/// (``Ledger/confirmStateFile()``), not only by a write: what the process holds of it is saved, and the loss thrown.
@Suite("state file lost after a run's last write")
struct StateFileLossTests {
    let dir: TemporaryDirectory
    let path: String
    let file = FileKey(source: "outbox", path: "a.txt")

    init() throws {
        dir = try TemporaryDirectory("sg-state-loss")
        path = dir.file("state.sqlite").path
    }

    /// A ledger holding one pending row, checked once while its file is still in place.
    func ledgerWithARow() async throws -> Ledger {
        let ledger = try Ledger(state: .sqlite(path: path))
        let now = Date()
        try await ledger.recordPending([Ledger.Pending(file: file, destination: "d", size: 1, modificationTime: now, sha256: "x", contentChanged: false)], at: now)
        try ledger.confirmStateFile()
        return ledger
    }

    @Test func aStateFileDeletedAfterTheLastWriteIsFoundAndWrittenBack() async throws {
        defer { dir.remove() }
        let ledger = try await ledgerWithARow()
        for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
        let error = #expect(throws: LedgerError.self) { try ledger.confirmStateFile() }
        #expect(error?.stateLost == true)
        #expect(error.map { "\($0)".contains("was deleted while syncgate was using it") } == true, "\(String(describing: error))")
        let saved = try Ledger(state: .sqlite(path: path))
        #expect(try await saved.entries().map(\.file) == [file], "what the process held is back at its path")
    }

    @Test func aStateFileReplacedAfterTheLastWriteIsLeftAloneAndSavedBesideIt() async throws {
        defer { dir.remove() }
        let ledger = try await ledgerWithARow()
        let other = Data("someone else's file\n".utf8)
        _ = FileManager.default.createFile(atPath: path + ".other", contents: other)
        rename(path + ".other", path)
        let error = #expect(throws: LedgerError.self) { try ledger.confirmStateFile() }
        #expect(error?.stateLost == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == other, "the other program's file is left as it is")
        let beside = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.hasPrefix("state.sqlite.recovered-") }
        #expect(beside.count == 1, "\(beside)")
    }
}
