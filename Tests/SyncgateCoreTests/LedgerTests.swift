import Foundation
import SyncgateCore
import Synchronization
import SyncgateTestSupport
import Testing

/// The ledger's own behaviour, on each engine (``LedgerEngine``: SQLite, and PostgreSQL on the test server).
// One test at a time: on PostgreSQL each ledger call blocks its thread for a round trip, and several such tests at
// once hold up the two-thread cooperative pool that every other suite of the run needs.
@Suite("state ledger: transitions, scheduling, damaged and foreign files", .serialized)
struct LedgerTests {
    let dir: TemporaryDirectory
    let retry = RetrySettings(file: 1, artwork: 1, baseDelay: .seconds(1), maxDelay: .seconds(20), jitter: .full,
                              maxRetryInterval: .seconds(3600), giveUpAfter: .seconds(7 * 86400))
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    let file = FileKey(source: "outbox", path: "a/b.png")

    init() throws { dir = try TemporaryDirectory("sg-ledger") }

    func pending(_ ledger: Ledger, sha: String = "aa", changed: Bool = false) async throws {
        try await ledger.recordPending([Ledger.Pending(file: file, destination: "car", size: 10, modificationTime: t0, sha256: sha, contentChanged: changed)], at: t0)
    }

    @Test(arguments: LedgerEngine.testable) func pendingUploadingSynced(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let ledger = try Ledger(state: try await state("state"))
            try await pending(ledger)
            await #expect(try ledger.entry(file, destination: "car")?.status == .pending)
            try await ledger.markUploading(file, destination: "car", at: t0 + 1)
            var e = try await #require(try ledger.entry(file, destination: "car"))
            #expect(e.status == .uploading)
            #expect(e.attempts == 1)
            #expect(e.lastAttemptAt == t0 + 1)
            try await ledger.markSynced(file, destination: "car", receipt: Receipt(remoteName: "a_b.png", etag: "e1"), size: 10, modificationTime: t0, sha256: "aa", at: t0 + 2)
            e = try await #require(try ledger.entry(file, destination: "car"))
            #expect(e.status == .synced)
            #expect(e.receipt?.remoteName == "a_b.png")
            #expect(e.receipt?.etag == "e1")
            #expect(e.syncedAt == t0 + 2)
            #expect(e.lastError == nil)
            await #expect(try ledger.counts()["car"]?[.synced] == 1)
            await #expect(try ledger.lastSuccess()["car"] == t0 + 2)
            await #expect(try ledger.recentlySynced(since: t0).map(\.file) == [file])
        }
    }

    /// ``Ledger/apply(_:)`` writes an attempt's start and its success as one row change; the rows must end exactly
    /// as if every update had been applied alone, in order, whatever lies between them.
    @Test(arguments: LedgerEngine.testable) func batchedUpdatesEndAsIfAppliedOneByOne(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let batched = try Ledger(state: try await state("batched"))
            let alone = try Ledger(state: try await state("alone"))
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
                try await ledger.recordPending(files.map { Ledger.Pending(file: $0, destination: "car", size: 4, modificationTime: t0, sha256: "ab", contentChanged: false) }, at: t0)
            }
            try batched.apply(updates)
            for update in updates { try alone.apply([update]) }
            for file in files {
                let a = try await #require(try batched.entry(file, destination: "car"))
                let b = try await #require(try alone.entry(file, destination: "car"))
                #expect(a == b, "\(file.path)")
            }
            if engine == .postgres {
                // A shared ledger: a start on a synced row nobody holds (released by its outcome) is not written; a
                // new claim (recordPending) comes first (issue 31: a woken instance never sets a synced row back).
                await #expect(try batched.entry(files[0], destination: "car")?.attempts == 1)
                await #expect(try batched.entry(files[0], destination: "car")?.status == .synced)
            } else {
                await #expect(try batched.entry(files[0], destination: "car")?.attempts == 2)
                await #expect(try batched.entry(files[0], destination: "car")?.status == .uploading)
            }
            await #expect(try batched.entry(files[3], destination: "car")?.attempts == 2)
            await #expect(try batched.entry(files[3], destination: "car")?.lastAttemptAt == t0 + 5)
            await #expect(try batched.entry(files[5], destination: "car")?.attempts == 0)
        }
    }

    /// On PostgreSQL a run of successes in one batch is written by one statement per 500 rows (one round trip,
    /// not one per file). It must end as one statement per row would: a row changed twice in a batch, a row another
    /// instance holds or delivered (left alone, issue 31), values that differ from row to row.
    @Test(arguments: LedgerEngine.testable) func aRunOfSuccessesEndsAsIfWrittenRowByRow(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, server in
            let batchedState = try await state("batched"), aloneState = try await state("alone")
            let batched = try Ledger(state: batchedState)
            let alone = try Ledger(state: aloneState)
            let count = 1_203  // more than two statements' worth
            let files = (0..<count).map { FileKey(source: "outbox", path: "g\($0).bin") }
            for ledger in [batched, alone] {
                try await ledger.recordPending(files.map { Ledger.Pending(file: $0, destination: "car", size: 4, modificationTime: t0, sha256: "ab", contentChanged: false) }, at: t0)
            }
            // Row 7: another instance holds it under a live lease; row 8: delivered by another instance, released.
            for location in [batchedState, aloneState] {
                _ = try await LedgerEngine.rawSQL("UPDATE files SET claimed_by = 'other', lease_until = 9999999999 WHERE path = 'g7.bin'", on: location, server: server)
                _ = try await LedgerEngine.rawSQL("UPDATE files SET claimed_by = NULL, lease_until = NULL, status = 'synced', size = 99 WHERE path = 'g8.bin'", on: location, server: server)
            }
            var updates: [Ledger.Update] = []
            for (n, file) in files.enumerated() {
                if n % 3 == 0 { updates.append(.uploading(file, destination: "car", at: t0 + 1)) }  // folded into its success
                let receipt = Receipt(remoteName: "r\(n)", etag: n % 2 == 0 ? "e\(n)" : nil)
                updates.append(.synced(file, destination: "car", receipt: receipt, size: Int64(n), modificationTime: t0 + Double(n),
                                       sha256: n % 5 == 0 ? nil : "s\(n)", at: t0 + 2 + Double(n)))
                if n == 600 {
                    // The same row again within the run, then a change of another kind to a row already synced.
                    updates.append(.synced(files[599], destination: "car", receipt: Receipt(remoteName: "again"), size: 1, modificationTime: t0, sha256: "x", at: t0 + 5_000))
                    updates.append(.failed(files[2], destination: "car", failure: DeliveryFailure(message: "later", failureClass: .retryable(), code: "E1", attempts: 1), retry: retry, at: t0 + 5_001))
                }
            }
            try batched.apply(updates)
            for update in updates { try alone.apply([update]) }
            let a = try await batched.entries(destination: "car")
            let b = try await alone.entries(destination: "car")
            #expect(a.count == count && b.count == count)
            for (x, y) in zip(a, b) where x != y { Issue.record("\(x.file.path): grouped \(x), row by row \(y)") }
            let byPath = Dictionary(uniqueKeysWithValues: a.map { ($0.file.path, $0) })
            #expect(byPath["g3.bin"]?.attempts == 1 && byPath["g3.bin"]?.lastAttemptAt == t0 + 1)
            #expect(byPath["g4.bin"]?.attempts == 0 && byPath["g4.bin"]?.status == .synced && byPath["g4.bin"]?.claimedBy == nil)
            #expect(byPath["g10.bin"]?.sha256 == nil && byPath["g10.bin"]?.size == 10)
            if engine == .postgres {
                #expect(byPath["g7.bin"]?.status == .pending && byPath["g7.bin"]?.claimedBy == "other")
                #expect(byPath["g8.bin"]?.size == 99)
                // An outcome released the row: a second one, in the same batch, finds it synced and held by nobody.
                #expect(byPath["g599.bin"]?.receipt?.remoteName == "r599")
                #expect(byPath["g2.bin"]?.status == .synced)
            } else {
                #expect(byPath["g7.bin"]?.status == .synced)  // one instance: every row is its own
                #expect(byPath["g599.bin"]?.receipt?.remoteName == "again")
                #expect(byPath["g2.bin"]?.status == .failed)
            }
        }
    }

    /// ``Ledger/withRows(source:paths:_:)``: the rows of just those files, every destination, in key order.
    @Test(arguments: LedgerEngine.testable) func theRowsOfChosenPathsComeInKeyOrder(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let ledger = try Ledger(state: try await state("state"))
            let paths = ["b", "a/c", "a", "é", "Z", "a b"]
            var rows: [Ledger.Pending] = []
            for source in ["outbox", "other"] {
                for path in paths {
                    for destination in ["car", "bucket"] {
                        rows.append(Ledger.Pending(file: FileKey(source: source, path: path), destination: destination, size: 1, modificationTime: t0, sha256: nil, contentChanged: false))
                    }
                }
            }
            try await ledger.recordPending(rows, at: t0)
            func read(_ chosen: [String]) throws -> [String] {
                try ledger.withRows(source: "outbox", paths: chosen) { stream in
                    var seen: [String] = []
                    while let key = stream.key {
                        seen.append("\(key.source)/\(key.path)@\(stream.destination ?? "?")")
                        try stream.advance()
                    }
                    return seen
                }
            }
            #expect(try read(["é", "a", "Z", "missing", "a/c"]) == [
                "outbox/Z@bucket", "outbox/Z@car", "outbox/a@bucket", "outbox/a@car", "outbox/a/c@bucket", "outbox/a/c@car",
                "outbox/é@bucket", "outbox/é@car",
            ])
            #expect(try read([]) == [])
        }
    }

    @Test(arguments: LedgerEngine.testable) func failedRunsScheduleGrowingRetriesThenGiveUp(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let ledger = try Ledger(state: try await state("state"))
            try await pending(ledger)
            let failure = DeliveryFailure(message: "503 busy", failureClass: .retryable(), code: "http-503", attempts: 2)
            try await ledger.markFailed(file, destination: "car", failure: failure, retry: retry, at: t0)
            var e = try await #require(try ledger.entry(file, destination: "car"))
            #expect(e.status == .failed)
            #expect(e.lastError == "503 busy")
            #expect(e.errorClass == .retryable())
            #expect(e.failedRuns == 1)
            #expect(e.nextRetryAt == t0 + 60)
            await #expect(try ledger.nextRetryDue(destination: "car") == t0 + 60)
            try await ledger.markFailed(file, destination: "car", failure: failure, retry: retry, at: t0 + 100)
            e = try await #require(try ledger.entry(file, destination: "car"))
            #expect(e.nextRetryAt == t0 + 100 + 120)
            for run in 3...12 { try await ledger.markFailed(file, destination: "car", failure: failure, retry: retry, at: t0 + Double(run * 1000)) }
            e = try await #require(try ledger.entry(file, destination: "car"))
            #expect(e.nextRetryAt == t0 + 12000 + 3600)
            try await ledger.markFailed(file, destination: "car", failure: failure, retry: retry, at: t0 + 8 * 86400)
            e = try await #require(try ledger.entry(file, destination: "car"))
            #expect(e.nextRetryAt == nil, "given up after give_up_after")
            #expect(e.firstFailedAt == t0)
            await #expect(try ledger.recentlyFailed(since: t0).map(\.file) == [file])
        }
    }

    @Test(arguments: LedgerEngine.testable) func permanentFailuresAreNotScheduled(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let ledger = try Ledger(state: try await state("state"))
            try await pending(ledger)
            try await ledger.markFailed(file, destination: "car", failure: DeliveryFailure(message: "INVALID_DATA", failureClass: .permanent, attempts: 1), retry: retry, at: t0)
            let e = try await #require(try ledger.entry(file, destination: "car"))
            #expect(e.errorClass == .permanent)
            #expect(e.nextRetryAt == nil)
            await #expect(try ledger.requestRetry(destination: "car", paths: [], at: t0 + 5) == 1)
            await #expect(try ledger.entry(file, destination: "car")?.status == .pending)
        }
    }

    @Test(arguments: LedgerEngine.testable) func interruptedUploadsBecomePendingAndForgetDropsFailed(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let ledger = try Ledger(state: try await state("state"))
            try await pending(ledger)
            try await ledger.markUploading(file, destination: "car", at: t0)
            await #expect(try ledger.resetInterrupted(at: t0 + 1) == 1)
            await #expect(try ledger.entry(file, destination: "car")?.status == .pending)
            await #expect(try ledger.entry(file, destination: "car")?.attempts == 1)
            try ledger.apply([.uploading(file, destination: "car", at: t0 + 2), .waiting(file, destination: "car", uncount: true, at: t0 + 3)])
            await #expect(try ledger.entry(file, destination: "car")?.attempts == 1, "an attempt cut short by the destination is not counted")
            try await ledger.markFailed(file, destination: "car", failure: DeliveryFailure(message: "x", failureClass: .permanent, attempts: 1), retry: retry, at: t0)
            await #expect(try ledger.forgetFailed(destination: nil, paths: ["a/b.png"]) == 1)
            await #expect(try ledger.entry(file, destination: "car") == nil)
        }
    }

    @Test(arguments: LedgerEngine.testable) func changedContentResetsFailureHistory(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let ledger = try Ledger(state: try await state("state"))
            try await pending(ledger)
            try await ledger.markFailed(file, destination: "car", failure: DeliveryFailure(message: "x", failureClass: .retryable(), attempts: 1), retry: retry, at: t0)
            try await pending(ledger, sha: "bb", changed: true)
            let e = try await #require(try ledger.entry(file, destination: "car"))
            #expect(e.failedRuns == 0)
            #expect(e.firstFailedAt == nil)
            #expect(e.sha256 == "bb")
        }
    }

    @Test(arguments: LedgerEngine.testable) func survivesReopeningAndIsReadableFromAnotherConnection(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let location = try await state("state")
            do {
                let ledger = try Ledger(state: location)
                #expect(ledger.schemaChange == .created(Ledger.schemaVersion))
                try await pending(ledger)
                try await ledger.noteRunStarted(at: t0)
                try await ledger.noteRunFinished(at: t0 + 3, exitCode: 75)
            }
            let again = try Ledger(state: location)
            #expect(again.schemaChange == .current(Ledger.schemaVersion))
            await #expect(try again.entries().count == 1)
            let run = try await #require(try again.lastRun())
            #expect(run.startedAt == t0 && run.finishedAt == t0 + 3 && run.exitCode == 75)
        }
    }

    /// Destination states, resume texts, removals and the change counter a gateway watches.
    @Test(arguments: LedgerEngine.testable) func destinationsResumeTextsRemovalsAndChanges(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let location = try await state("state")
            let ledger = try Ledger(state: location)
            let other = try Ledger(state: location)
            try await pending(ledger)
            try await ledger.markAway("car", state: .unavailable, error: "connection refused", code: "refused", fingerprint: nil,
                                probeFailed: true, probeIntervalMax: .seconds(300), at: t0)
            var record = try await #require(try ledger.destinationRecords()["car"])
            #expect(record.state == .unavailable)
            #expect(record.failedProbes == 1)
            #expect(record.nextProbeAt == t0 + 2)
            try await ledger.markAway("car", state: .blocked, error: "denied", code: nil, fingerprint: "fp", probeFailed: false,
                                probeIntervalMax: .seconds(300), at: t0 + 10)
            await #expect(try ledger.unblock(destination: "car", at: t0 + 20) == 1)
            try await ledger.markAvailable("car", at: t0 + 30)
            record = try await #require(try ledger.destinationRecords()["car"])
            #expect(record.state == .available)
            #expect(record.lastSeenAt == t0 + 30)

            let store = ledger.resumeStore(destination: "car")
            try store.save("big.bin", "upload-1", now: t0)
            try store.save("big.bin", "upload-2", now: t0 + 1)
            #expect(try store.load("big.bin") == "upload-2")
            #expect(try store.all().map(\.name) == ["big.bin"])
            try store.remove("big.bin")
            #expect(try store.load("big.bin") == nil)

            #expect(try ledger.markRemoved([file], at: t0 + 40) == 1)
            await #expect(try ledger.removedCounts()["car"] == 1)
            await #expect(try ledger.counts()["car"] == nil, "a file gone from its source is not counted")
            try ledger.clearRemoved([file])
            await #expect(try ledger.removedCounts()["car"] == nil)
            try ledger.markMoved([file], at: t0 + 50)
            await #expect(try ledger.entry(file, destination: "car")?.removed == .moved)
            await #expect(try ledger.dropRemoved(destination: "car", before: t0 + 60, keepingDeletions: true) == 1)

            // Another process's retry or forget changes the counter the gateway watches; its own do not.
            let seen = try await ledger.changeCounter()
            try await pending(other)
            try await other.markFailed(file, destination: "car", failure: DeliveryFailure(message: "x", failureClass: .permanent, attempts: 1), retry: retry, at: t0)
            await #expect(try other.requestRetry(destination: nil, paths: [], at: t0 + 70) == 1)
            await #expect(try ledger.changeCounter() != seen)
        }
    }

    /// Rows come in the byte order of their paths whatever the database's collation (the planner merges them with
    /// a scan sorted that way), and a long walk reads on past PostgreSQL's pages.
    @Test(arguments: LedgerEngine.testable) func rowsComeInByteOrderAcrossPages(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let ledger = try Ledger(state: try await state("state"))
            let odd = ["b", "B", "a", "Ä", "_x", "a/b", "a b", "a.b", "a-b", "Z", "é", "e"]
            let many = (0..<2500).map { String(format: "n/%05d", $0) }
            let paths = odd + many
            var rows: [Ledger.Pending] = []
            for path in paths {
                for destination in ["car", "archive"] {
                    rows.append(Ledger.Pending(file: FileKey(source: "outbox", path: path), destination: destination, size: 1,
                                               modificationTime: t0, sha256: nil, contentChanged: false))
                }
            }
            try await ledger.recordPending(rows, at: t0)
            let bytewise = paths.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            var walked: [String] = []
            var destinations: [String] = []
            try ledger.withRows { stream in
                while let key = stream.key {
                    walked.append(key.path)
                    destinations.append(stream.destination ?? "")
                    try stream.advance()
                }
            }
            #expect(walked == bytewise.flatMap { [$0, $0] })
            #expect(destinations.prefix(2) == ["archive", "car"])
            var onlyCar = 0
            try ledger.withRows(destination: "car") { stream in
                while stream.key != nil {
                    onlyCar += 1
                    try stream.advance()
                }
            }
            #expect(onlyCar == paths.count)
            var after: [String] = []
            try ledger.withRows(source: "outbox", after: "n/02497") { stream in
                while let key = stream.key {
                    after.append(key.path)
                    try stream.advance()
                }
            }
            #expect(after == ["n/02498", "n/02498", "n/02499", "n/02499"] + bytewise.filter { $0 > "n/02499" }.flatMap { [$0, $0] })
            let counted = Mutex(0)
            try await ledger.forEachEntry(destination: "archive") { _ in counted.withLock { $0 += 1 } }
            #expect(counted.withLock { $0 } == paths.count)
            await #expect(try ledger.entries(paths: ["Ä", "a b"]).map(\.file.path) == ["a b", "a b", "Ä", "Ä"])
        }
    }

    /// `syncgate migrate`'s three outcomes, and a schema newer than this syncgate refused, untouched.
    @Test(arguments: LedgerEngine.testable) func schemaIsUpgradedInPlaceAndANewerOneRefused(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, server in
            let location = try await state("state")
            do {
                let ledger = try Ledger(state: location)
                #expect(ledger.schemaChange == .created(9))
                try await pending(ledger)
            }
            // Back to schema 3: the removal columns of schema 4, the claims and instances of schema 5 and the
            // judgement tables of schema 6, the leaders of schema 7, the verifications of schema 8 and the
            // destinations' targets of schema 9 gone.
            _ = try await LedgerEngine.rawSQL("""
                DROP INDEX files_removed; ALTER TABLE files DROP COLUMN removed; ALTER TABLE files DROP COLUMN removed_at;
                DROP INDEX files_claimed; ALTER TABLE files DROP COLUMN claimed_by; ALTER TABLE files DROP COLUMN lease_until;
                DROP TABLE instances; DROP TABLE instance_walks;
                ALTER TABLE destinations DROP COLUMN retry_after_until; DROP TABLE source_roots; DROP TABLE remote_deletions; DROP TABLE destination_leaders; DROP TABLE verifications; DROP TABLE destination_targets;
                UPDATE syncgate_meta SET value = '3' WHERE key = 'schema';
                """, on: location, server: server)
            let upgraded = try Ledger(state: location)
            #expect(upgraded.schemaChange == .upgraded(from: 3, to: 9))
            await #expect(try upgraded.entry(file, destination: "car")?.claimedBy == nil)
            await #expect(try upgraded.entry(file, destination: "car")?.removed == nil)
            try upgraded.markRemoved([file], at: t0)
            await #expect(try upgraded.entry(file, destination: "car")?.removed == .source)

            _ = try await LedgerEngine.rawSQL("UPDATE syncgate_meta SET value = '10' WHERE key = 'schema'", on: location, server: server)
            do {
                _ = try Ledger(state: location)
                Issue.record("a newer schema must be refused")
            } catch let error as LedgerError {
                #expect(error.message.contains("newer syncgate (schema 10"), "\(error)")
                #expect(!error.temporary)
            }
            #expect(try await LedgerEngine.rawSQL("SELECT value FROM syncgate_meta WHERE key = 'schema'", on: location, server: server) == "10")
        }
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

    /// A PostgreSQL database of another program is refused and left untouched; a wrong password, a missing
    /// database and a server that is not there are told apart, none of them showing the password.
    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)))
    func foreignOrUnreachablePostgresDatabasesAreReported() async throws {
        try await PostgresTestServer.withDatabase { url, server in
            let location = try PostgresStateLocation.parse(url)
            try await server.psql("CREATE TABLE invoices (id INTEGER); INSERT INTO invoices VALUES (7);", database: location.database)
            do {
                _ = try Ledger(state: .postgres(location))
                Issue.record("a foreign database must be refused")
            } catch let error as LedgerError {
                #expect(error.message.contains("another program"), "\(error)")
            }
            #expect(try await server.psql("SELECT id FROM invoices", database: location.database) == "7")

            var wrong = location
            wrong.password = Secret("not-the-password")
            do {
                _ = try Ledger(state: .postgres(wrong))
                Issue.record("a wrong password must be refused")
            } catch let error as LedgerError {
                #expect(error.message.contains("refused the login of user syncgate"), "\(error)")
                #expect(!error.description.contains("not-the-password"))
                #expect(!error.temporary)
            }
            var missing = location
            missing.database = "nosuch"
            do {
                _ = try Ledger(state: .postgres(missing))
                Issue.record("a missing database must be reported")
            } catch let error as LedgerError {
                #expect(error.message.contains("does not exist"), "\(error)")
            }
            var away = location
            away.port = Loopback.freePort()
            do {
                _ = try Ledger(state: .postgres(away))
                Issue.record("a server that is not there must be reported")
            } catch let error as LedgerError {
                #expect(error.temporary, "\(error)")
                #expect(error.description.hasPrefix("state database postgres://syncgate@127.0.0.1:\(away.port)/"), "\(error)")
                #expect(!error.description.contains(PostgresTestServer.password))
            }
        }
    }

    /// The advisory lock ends with its connection (a killed process, a server restart): nothing is left stuck, and
    /// the holder survives the loss (it logs it) and releases without trouble.
    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)))
    func thePostgresStateLockEndsWithItsConnection() async throws {
        try await PostgresTestServer.withDatabase { url, server in
            let location = try PostgresStateLocation.parse(url)
            let state = StateLocation.postgres(location)
            _ = try Ledger(state: state)
            let lock = StateLock(state: state)
            try lock.acquire()
            #expect(StateLock.isHeld(state: state))
            // Only this test's database: other tests of this process hold state locks of their own beside it.
            let ended = try await server.psql("""
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE application_name = 'syncgate pid \(getpid())' AND datname = '\(location.database)'
                """)
            #expect(ended == "1")
            var held = true
            for _ in 0..<50 where held {
                held = StateLock.isHeld(state: state)
                if held { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(!held)
            let other = StateLock(state: state)
            try other.acquire()
            other.release()
            lock.release()
        }
    }

    /// SQLite: one holder at a time. PostgreSQL: the lock is shared (a fleet works on one ledger, each file claimed
    /// by the instance that sends it); it tells who runs, a gateway first.
    @Test(arguments: LedgerEngine.testable) func stateLockIsExclusiveOnSQLiteAndSharedOnPostgres(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let location = try await state("state")
            _ = try Ledger(state: location)
            #expect(!StateLock.isHeld(state: location))
            let first = StateLock(state: location)
            try first.acquire()
            #expect(StateLock.isHeld(state: location))
            #expect(!StateLock.gatewayHolds(state: location))
            let second = StateLock(state: location)
            do {
                try second.acquire()
                #expect(engine == .postgres, "a second holder must be refused on SQLite")
            } catch let busy as StateLock.Busy {
                #expect(engine == .sqlite, "PostgreSQL's lock is shared")
                #expect(busy.holder == "pid \(getpid())")
                #expect(busy.description.contains("another syncgate (pid \(getpid())) is using"), "\(busy)")
            }
            second.release()
            first.release()
            #expect(!StateLock.isHeld(state: location))
            let gateway = StateLock(state: location)
            try gateway.acquire(gateway: true)
            #expect(StateLock.gatewayHolds(state: location))
            let beside = StateLock(state: location)
            do {
                try beside.acquire()
                #expect(engine == .postgres, "a second holder must be refused on SQLite")
                #expect(StateLock.gatewayHolds(state: location), "the gateway is seen beside a sync")
            } catch let busy as StateLock.Busy {
                #expect(engine == .sqlite)
                #expect(busy.isGateway)
                #expect(busy.description.hasPrefix("a gateway (pid \(getpid())) is running on \(location.displayName)"), "\(busy)")
            }
            beside.release()
            gateway.release()
        }
    }
}
