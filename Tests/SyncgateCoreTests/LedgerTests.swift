import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

@Suite("state ledger: transitions, scheduling, damaged and foreign files")
struct LedgerTests {
    let dir: TemporaryDirectory
    let retry = RetrySettings(file: 1, artwork: 1, baseDelay: .seconds(1), maxDelay: .seconds(20), jitter: .full,
                              maxRetryInterval: .seconds(3600), giveUpAfter: .seconds(7 * 86400))
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let file = FileKey(source: "outbox", path: "a/b.png")

    init() throws { dir = try TemporaryDirectory("sg-ledger") }

    func pending(_ ledger: Ledger, sha: String = "aa", changed: Bool = false) throws {
        try ledger.recordPending([Ledger.Pending(file: file, destination: "car", size: 10, modificationTime: t0, sha256: sha, contentChanged: changed)], at: t0)
    }

    @Test func pendingUploadingSynced() throws {
        defer { dir.remove() }
        let ledger = try Ledger(path: dir.file("state.sqlite").path)
        try pending(ledger)
        #expect(try ledger.entry(file, destination: "car")?.status == .pending)
        try ledger.markUploading(file, destination: "car", at: t0 + 1)
        var e = try #require(try ledger.entry(file, destination: "car"))
        #expect(e.status == .uploading)
        #expect(e.attempts == 1)
        #expect(e.lastAttemptAt == t0 + 1)
        try ledger.markSynced(file, destination: "car", receipt: Receipt(remoteName: "a_b.png", etag: "e1"), size: 10, modificationTime: t0, sha256: "aa", at: t0 + 2)
        e = try #require(try ledger.entry(file, destination: "car"))
        #expect(e.status == .synced)
        #expect(e.receipt?.remoteName == "a_b.png")
        #expect(e.receipt?.etag == "e1")
        #expect(e.syncedAt == t0 + 2)
        #expect(e.lastError == nil)
        #expect(try ledger.counts()["car"]?[.synced] == 1)
    }

    /// ``Ledger/apply(_:)`` writes an attempt's start and its success as one row change; the rows must end exactly
    /// as if every update had been applied alone, in order, whatever lies between them.
    @Test func batchedUpdatesEndAsIfAppliedOneByOne() throws {
        defer { dir.remove() }
        let batched = try Ledger(path: dir.file("batched.sqlite").path)
        let alone = try Ledger(path: dir.file("alone.sqlite").path)
        let files = (0..<6).map { FileKey(source: "outbox", path: "f\($0).bin") }
        let receipt = Receipt(remoteName: "r", etag: "e", detail: "4 bytes", sha256: "ab")
        func synced(_ f: Int, at t: Double) -> Ledger.Update {
            .synced(files[f], destination: "car", receipt: receipt, size: 4, modificationTime: t0, sha256: "ab", at: t0 + t)
        }
        func uploading(_ f: Int, at t: Double) -> Ledger.Update { .uploading(files[f], destination: "car", at: t0 + t) }
        let updates: [Ledger.Update] = [
            uploading(0, at: 1), synced(0, at: 2),                                      // the usual pair
            uploading(1, at: 1), uploading(2, at: 1), synced(2, at: 3), synced(1, at: 4),  // interleaved with another file
            uploading(3, at: 1), .retryNote(files[3], destination: "car", error: "slow", at: t0 + 2),
            uploading(3, at: 5), synced(3, at: 6),                                      // a retry: two attempts
            uploading(4, at: 1), .progress(files[4], destination: "car", bytes: 2), synced(4, at: 7),
            synced(5, at: 8),                                                           // a success without a start here
            uploading(0, at: 9),                                                        // a start left open
        ]
        for ledger in [batched, alone] {
            try ledger.recordPending(files.map { Ledger.Pending(file: $0, destination: "car", size: 4, modificationTime: t0, sha256: "ab", contentChanged: false) }, at: t0)
        }
        try batched.apply(updates)
        for update in updates { try alone.apply([update]) }
        for file in files {
            let a = try #require(try batched.entry(file, destination: "car"))
            let b = try #require(try alone.entry(file, destination: "car"))
            #expect(a == b, "\(file.path)")
        }
        #expect(try batched.entry(files[0], destination: "car")?.attempts == 2)
        #expect(try batched.entry(files[0], destination: "car")?.status == .uploading)
        #expect(try batched.entry(files[3], destination: "car")?.attempts == 2)
        #expect(try batched.entry(files[3], destination: "car")?.lastAttemptAt == t0 + 5)
        #expect(try batched.entry(files[5], destination: "car")?.attempts == 0)
    }

    @Test func failedRunsScheduleGrowingRetriesThenGiveUp() throws {
        defer { dir.remove() }
        let ledger = try Ledger(path: dir.file("state.sqlite").path)
        try pending(ledger)
        let failure = DeliveryFailure(message: "503 busy", failureClass: .retryable(), code: "http-503", attempts: 2)
        try ledger.markFailed(file, destination: "car", failure: failure, retry: retry, at: t0)
        var e = try #require(try ledger.entry(file, destination: "car"))
        #expect(e.status == .failed)
        #expect(e.lastError == "503 busy")
        #expect(e.errorClass == .retryable())
        #expect(e.failedRuns == 1)
        #expect(e.nextRetryAt == t0 + 60)
        try ledger.markFailed(file, destination: "car", failure: failure, retry: retry, at: t0 + 100)
        e = try #require(try ledger.entry(file, destination: "car"))
        #expect(e.nextRetryAt == t0 + 100 + 120)
        for run in 3...12 { try ledger.markFailed(file, destination: "car", failure: failure, retry: retry, at: t0 + Double(run * 1000)) }
        e = try #require(try ledger.entry(file, destination: "car"))
        #expect(e.nextRetryAt == t0 + 12000 + 3600)
        try ledger.markFailed(file, destination: "car", failure: failure, retry: retry, at: t0 + 8 * 86400)
        e = try #require(try ledger.entry(file, destination: "car"))
        #expect(e.nextRetryAt == nil, "given up after give_up_after")
        #expect(e.firstFailedAt == t0)
    }

    @Test func permanentFailuresAreNotScheduled() throws {
        defer { dir.remove() }
        let ledger = try Ledger(path: dir.file("state.sqlite").path)
        try pending(ledger)
        try ledger.markFailed(file, destination: "car", failure: DeliveryFailure(message: "INVALID_DATA", failureClass: .permanent, attempts: 1), retry: retry, at: t0)
        let e = try #require(try ledger.entry(file, destination: "car"))
        #expect(e.errorClass == .permanent)
        #expect(e.nextRetryAt == nil)
        #expect(try ledger.requestRetry(destination: "car", paths: [], at: t0 + 5) == 1)
        #expect(try ledger.entry(file, destination: "car")?.status == .pending)
    }

    @Test func interruptedUploadsBecomePendingAndForgetDropsFailed() throws {
        defer { dir.remove() }
        let ledger = try Ledger(path: dir.file("state.sqlite").path)
        try pending(ledger)
        try ledger.markUploading(file, destination: "car", at: t0)
        #expect(try ledger.resetInterrupted(at: t0 + 1) == 1)
        #expect(try ledger.entry(file, destination: "car")?.status == .pending)
        #expect(try ledger.entry(file, destination: "car")?.attempts == 1)
        try ledger.markFailed(file, destination: "car", failure: DeliveryFailure(message: "x", failureClass: .permanent, attempts: 1), retry: retry, at: t0)
        #expect(try ledger.forgetFailed(destination: nil, paths: ["a/b.png"]) == 1)
        #expect(try ledger.entry(file, destination: "car") == nil)
    }

    @Test func changedContentResetsFailureHistory() throws {
        defer { dir.remove() }
        let ledger = try Ledger(path: dir.file("state.sqlite").path)
        try pending(ledger)
        try ledger.markFailed(file, destination: "car", failure: DeliveryFailure(message: "x", failureClass: .retryable(), attempts: 1), retry: retry, at: t0)
        try pending(ledger, sha: "bb", changed: true)
        let e = try #require(try ledger.entry(file, destination: "car"))
        #expect(e.failedRuns == 0)
        #expect(e.firstFailedAt == nil)
        #expect(e.sha256 == "bb")
    }

    @Test func survivesReopeningAndIsReadableFromAnotherConnection() throws {
        defer { dir.remove() }
        let path = dir.file("state.sqlite").path
        do {
            let ledger = try Ledger(path: path)
            try pending(ledger)
        }
        let again = try Ledger(path: path)
        #expect(try again.entries().count == 1)
    }

    @Test func damagedOrForeignStateFilesAreReportedNotReplaced() async throws {
        defer { dir.remove() }
        let garbage = try dir.write("garbage.sqlite", String(repeating: "not a database ", count: 400))
        #expect(throws: LedgerError.self) { try Ledger(path: garbage.path) }
        #expect(try Data(contentsOf: garbage) == Data(String(repeating: "not a database ", count: 400).utf8))

        let foreign = dir.file("foreign.sqlite").path
        let result = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/sqlite3"), [foreign, "CREATE TABLE invoices (id INTEGER); INSERT INTO invoices VALUES (7);"])
        try #require(result.status == 0, "sqlite3 is needed: \(result.stderr)")
        do {
            _ = try Ledger(path: foreign)
            Issue.record("a foreign database must be refused")
        } catch let error as LedgerError {
            #expect(error.message.contains("another program"))
        }
        let check = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/sqlite3"), [foreign, "SELECT id FROM invoices;"])
        #expect(check.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "7")
    }

    @Test func stateLockIsExclusive() throws {
        defer { dir.remove() }
        let path = dir.file("state.sqlite").path
        let first = StateLock(statePath: path)
        try first.acquire()
        #expect(StateLock.isHeld(statePath: path))
        #expect(throws: StateLock.Busy.self) { try StateLock(statePath: path).acquire() }
        first.release()
        let second = StateLock(statePath: path)
        try second.acquire()
        second.release()
    }
}
