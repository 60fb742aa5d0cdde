import Foundation
@testable import SyncgateCore
import SyncgateTestSupport
import Testing

/// Issue 31: a fleet that is safe when an instance is cut off from PostgreSQL or frozen. Real PostgreSQL, and the
/// fault proxy (`blackhole`: a network cut without a reset) between one instance and it:
/// - no ledger call waits for ever: a statement against a server that stopped answering ends within its deadline
///   with a temporary error, and the ledger works again on a new connection once the server answers;
/// - the lease keeper renews on a connection of its own while the ledger's writer is stuck behind a lock;
/// - an instance whose renewals fail stops starting uploads (its fence lapses) before its lease ends;
/// - a leader whose lead another instance took (a new epoch) has its writes refused.
/// Limits are generous (a loaded two-core machine): what is checked is an order of events, not a duration. The time
/// limits only catch a hang: in a full run on two cores, a test here waited 184 s for the shared PostgreSQL server
/// and 75 s more for its fault proxy (both queue behind the start-up of every other test's servers) before its own
/// 20 s of work.
@Suite("state ledger: deadlines and fencing of a fleet's instances", .serialized)
struct LedgerFencingTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func key(_ n: Int) -> FileKey { FileKey(source: "outbox", path: "f\(n).bin") }

    func pending(_ n: Int, destination: String = "bucket") -> Ledger.Pending {
        Ledger.Pending(file: key(n), destination: destination, size: 10, modificationTime: t0, sha256: "aa", contentChanged: false)
    }

    /// The ledger's database through a fault proxy, and directly.
    func withProxiedDatabase(_ body: (_ proxied: StateLocation, _ direct: StateLocation, _ proxy: FaultProxy, _ server: PostgresTestServer) async throws -> Void) async throws {
        let t = ContinuousClock.now
        try await PostgresTestServer.withDatabase { url, server in
            print("fencing: database ready after \(ContinuousClock.now - t)")
            let direct = try PostgresStateLocation.parse(url)
            let proxy = try await FaultProxy.start(targetPort: direct.port)
            print("fencing: proxy ready after \(ContinuousClock.now - t)")
            defer { proxy.stop() }
            var proxied = direct
            proxied.port = proxy.port
            try await body(.postgres(proxied), .postgres(direct), proxy, server)
        }
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)), .timeLimit(.minutes(30)))
    func aStatementAgainstAStalledServerEndsWithinItsDeadline() async throws {
        try await withProxiedDatabase { proxied, _, proxy, _ in
            let t = ContinuousClock.now
            let ledger = try Ledger(state: proxied, leaseSeconds: 30, statementTimeout: 2)
            await #expect(try ledger.recordPending([pending(1)], at: t0) == [true])
            print("stalled: ledger open after \(ContinuousClock.now - t)")

            // The server stops answering; the connections stay open (no reset, no FIN).
            try proxy.set(["mode": "blackhole"])
            let started = ContinuousClock.now
            var caught: (any Error)?
            do {
                // On a thread of its own: the wait is seconds long, and the cooperative pool's threads are few.
                _ = try await OffThePool.run { try ledger.blockingEntry(key(1), destination: "bucket") }
            } catch {
                caught = error
            }
            let took = ContinuousClock.now - started
            let error = try #require(caught as? LedgerError, "the read did not fail: \(String(describing: caught))")
            #expect(error.temporary, "\(error)")
            #expect(error.message.contains("not answering"), "\(error)")
            #expect(!error.description.contains(PostgresTestServer.password))
            // The deadline is 2 s + 5 s on the client; a minute is far beyond it and far below "for ever".
            #expect(took < .seconds(60), "the read took \(took)")

            // A new connection to a server that does not answer has a deadline too (10 s).
            let again = ContinuousClock.now
            await #expect(throws: LedgerError.self) { try await OffThePool.run { try ledger.blockingEntry(key(1), destination: "bucket") } }
            #expect(ContinuousClock.now - again < .seconds(60))
            print("stalled: first read failed in \(took), a new connection in \(ContinuousClock.now - again)")

            // The server answers again: the ledger connects afresh and works.
            try proxy.pass()
            let back = ContinuousClock.now
            #expect(try await OffThePool.run { try ledger.blockingEntry(key(1), destination: "bucket")?.status } == .pending)
            print("stalled: read again after \(ContinuousClock.now - back)")
        }
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)), .timeLimit(.minutes(30)))
    func aStatementPastTheServersTimeoutIsCancelledAsTemporary() async throws {
        let dir = try TemporaryDirectory("sg-fencing")
        defer { dir.remove() }
        try await LedgerEngine.postgres.withStates(dir) { state, _ in
            let ledger = try Ledger(state: try await state("timeout"), leaseSeconds: 30, statementTimeout: 1)
            let error = await #expect(throws: LedgerError.self) {
                try await OffThePool.run { try ledger.blockingRead { db in try db.execute("SELECT pg_sleep(20)", []) } }
            }
            #expect(error?.temporary == true && error?.message.contains("past its deadline") == true, "\(String(describing: error))")
            await #expect(try ledger.read { db in try db.fetchOne("SELECT 1", [])?.int(0) } == 1)
        }
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)), .timeLimit(.minutes(30)))
    func theLeaseKeeperRenewsWhileTheWriterIsStuck() async throws {
        let dir = try TemporaryDirectory("sg-fencing")
        defer { dir.remove() }
        try await LedgerEngine.postgres.withStates(dir) { state, _ in
            let location = try await state("stuck")
            let a = try Ledger(state: location, leaseSeconds: 4)
            let b = try Ledger(state: location, leaseSeconds: 60)
            let blocker = try Ledger(state: location, leaseSeconds: 60)
            await #expect(try a.recordPending([pending(1)], at: t0) == [true])
            await #expect(try b.recordPending([pending(2)], at: t0) == [true])
            let firstLease = try await #require(try b.entry(key(1), destination: "bucket")?.leaseUntil)

            // Another session holds B's row locked; A's write on it waits for that lock, holding A's writer.
            let locked = DispatchSemaphore(value: 0)
            let blocking = Thread {
                try? blocker.blockingWrite { db in
                    _ = try db.fetchAll("SELECT path FROM files WHERE path = 'f2.bin' FOR UPDATE", [])
                    locked.signal()
                    Thread.sleep(forTimeInterval: 12)
                }
            }
            blocking.start()
            try await OffThePool.run { locked.wait() }
            let stuckWrite = Thread {
                try? a.apply([.synced(key(2), destination: "bucket", receipt: Receipt(remoteName: "f2.bin"), size: 10, modificationTime: t0, sha256: "aa", at: t0)])
            }
            stuckWrite.start()

            // A's lease on its own row moves on meanwhile (renewed every second), and its fence holds.
            var renewed = false
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline, !renewed {
                try await Task.sleep(for: .milliseconds(200))
                let lease = try await b.entry(key(1), destination: "bucket")?.leaseUntil
                renewed = lease.map { $0.timeIntervalSince(firstLease) > 1.5 } ?? false
            }
            #expect(renewed, "A's lease was not renewed while its writer was stuck")
            #expect(a.fenceRefusal(destination: "bucket", needsOneWriter: false, token: a.fenceToken()) == nil)
            // The stuck write ends with the lock, refused: the row is B's.
            while stuckWrite.isExecuting { try await Task.sleep(for: .milliseconds(200)) }
            await #expect(try b.entry(key(2), destination: "bucket")?.claimedBy == b.instanceID)
            await #expect(try b.entry(key(2), destination: "bucket")?.status == .pending)
        }
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)), .timeLimit(.minutes(30)))
    func anInstanceCutOffStopsStartingUploadsBeforeItsLeaseEnds() async throws {
        try await withProxiedDatabase { proxied, direct, proxy, _ in
            let a = try Ledger(state: proxied, leaseSeconds: 9, statementTimeout: 2)
            let b = try Ledger(state: direct, leaseSeconds: 60)
            let token = a.fenceToken()
            await #expect(try a.recordPending([pending(1)], at: t0) == [true])
            #expect(a.fenceRefusal(destination: "bucket", needsOneWriter: false, token: token) == nil, "a fresh claim holds")

            try proxy.set(["mode": "blackhole"])
            var refusal: String?
            let deadline = ContinuousClock.now + .seconds(60)
            while refusal == nil, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                refusal = a.fenceRefusal(destination: "bucket", needsOneWriter: false, token: token)
            }
            // From when on A refused to start uploads: its last confirmed renewal plus the fence's window (the poll above
            // may notice later on a loaded machine; every ask from that instant on is refused).
            let fence = a.leases.fence
            let since = try #require(fence.sinceConfirmed())
            let lapsedAt = Date().addingTimeInterval(-(since - fence.window).seconds)
            #expect(refusal?.contains("could not renew its leases") == true, "\(refusal ?? "the fence never lapsed")")
            // The lease that A's last renewal wrote has not ended when A stopped (same host: one wall clock).
            let row = try await #require(try b.entry(key(1), destination: "bucket"))
            #expect(row.claimedBy == a.instanceID)
            let leaseEnd = try #require(row.leaseUntil)
            #expect(lapsedAt < leaseEnd, "A stopped at \(lapsedAt), its lease ended at \(leaseEnd)")

            // The server answers again: A renews, but work taken under the old token never goes on.
            try proxy.pass()
            var renewedAgain = false
            let later = ContinuousClock.now + .seconds(60)
            while !renewedAgain, ContinuousClock.now < later {
                try await Task.sleep(for: .milliseconds(200))
                renewedAgain = a.fenceRefusal(destination: "bucket", needsOneWriter: false, token: a.fenceToken()) == nil
            }
            #expect(renewedAgain, "A never renewed again")
            #expect(a.fenceRefusal(destination: "bucket", needsOneWriter: false, token: token) != nil, "a lapse is for good")
        }
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)), .timeLimit(.minutes(30)))
    func aStaleLeadersWritesAreRefusedByEpoch() async throws {
        try await PostgresTestServer.withDatabase { url, server in
            let location = try PostgresStateLocation.parse(url)
            let a = try Ledger(state: .postgres(location), leaseSeconds: 30)
            let b = try Ledger(state: .postgres(location), leaseSeconds: 30)
            #expect(await a.leads("sheet", needsOneWriter: true))
            #expect(!(await b.leads("sheet", needsOneWriter: true)), "one leader at a time")
            let first = try #require(a.leadership?.epoch("sheet"))
            await #expect(try a.recordPending([pending(1, destination: "sheet"), pending(2, destination: "sheet")], at: t0) == [true, true])
            try await a.markUploading(key(1), destination: "sheet", at: t0)

            // A's lead ends on the server (its session is ended) without A noticing; B takes the lead.
            let ended = try await server.psql("""
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE application_name = 'syncgate leader pid \(getpid())' AND datname = '\(location.database)'
                    AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = \(DestinationLeadership.lockClass))
                """)
            #expect(ended == "1")
            var led = false
            for _ in 0..<100 where !led {
                led = await b.leads("sheet", needsOneWriter: true)
                if !led { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(led, "B did not take the lead")
            let second = try #require(b.leadership?.epoch("sheet"))
            #expect(second > first)
            // A's lead was confirmed a moment ago, so B waits it out before sending.
            #expect(b.leadReadyIn("sheet") > .zero)

            // A, stale, writes an outcome on a row it still holds: refused, and nothing changed.
            let refused = await #expect(throws: LedgerError.self) {
                try await a.markSynced(key(1), destination: "sheet", receipt: Receipt(remoteName: "f1"), size: 10, modificationTime: t0, sha256: "aa", at: t0)
            }
            #expect(refused?.temporary == true && refused?.message.contains("no longer leads sheet") == true, "\(String(describing: refused))")
            #expect(try await b.entry(key(1), destination: "sheet")?.status == .uploading)
            await #expect(throws: LedgerError.self) { try await a.recordPending([pending(3, destination: "sheet")], at: t0) }
            #expect(try await b.entry(key(3), destination: "sheet") == nil)
            // A knows too at its next renewal (every quarter of a lease), before it sends anything.
            a.leadership?.confirm()
            #expect(a.fenceRefusal(destination: "sheet", needsOneWriter: true, token: a.fenceToken()) != nil)
            // B, the leader, writes.
            await #expect(try b.recordPending([pending(3, destination: "sheet")], at: t0) == [true])
            #expect(b.leadership?.epoch("sheet") == second)
        }
    }
}
