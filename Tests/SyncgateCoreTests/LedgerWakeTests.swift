import Foundation
import NIOCore
import Synchronization
@testable import SyncgateCore
import SyncgateTestSupport
import Testing

/// A process frozen while PostgreSQL restarts wakes to every one of its connections ended at once, its deadlines
/// long past and its timers due together. Here the freeze is the ledger's PostgreSQL event loop held busy (nothing of
/// PostgreSQL's is read nor written meanwhile) while a writer, the lease keeper and a lead keep using the ledger and
/// the server restarts; then the loop is let go. Round after round, the ledger must go on (or fail its calls as
/// temporary errors) and the process must not crash.
@Suite("state ledger: waking after a PostgreSQL restart", .serialized)
struct LedgerWakeTests {
    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)), .timeLimit(.minutes(30)))
    func aLedgerWokenAfterRestartsGoesOn() async throws {
        // The loop it freezes is every PostgreSQL ledger's of this process: no other test's ledger meanwhile.
        await LedgerLoopGate.shared.enterExclusive()
        defer { LedgerLoopGate.shared.leaveExclusive() }
        let server = try await PostgresTestServer()
        defer { server.stop() }
        let database = try await server.createDatabase()
        let location = try PostgresStateLocation.parse(server.url(database: database))
        let ledger = try Ledger(state: .postgres(location), leaseSeconds: 3, statementTimeout: 1)
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        let stop = Flag()
        // The writers' and the lead's tasks are not this test's children: a test that ends early (a failed require, its
        // time limit) must still stop them, or they go on against a server that is gone.
        defer { stop.set() }
        let rounds = Int(ProcessInfo.processInfo.environment["SYNCGATE_WAKE_ROUNDS"] ?? "") ?? 3

        // The writers: claims, starts and outcomes, as a run records them.
        let writers = (0..<3).map { w in
            Task {
                var n = 0
                while !stop.isSet {
                    n += 1
                    let key = FileKey(source: "outbox", path: "w\(w)/f\(n).bin")
                    let destination = n % 2 == 0 ? "sheet" : "bucket"
                    do {
                        _ = try await ledger.recordPending([Ledger.Pending(file: key, destination: destination, size: 1, modificationTime: t0, sha256: "aa",
                                                                     contentChanged: false, unlessSynced: true)], at: t0)
                        try await ledger.markUploading(key, destination: destination, at: t0)
                        try await ledger.markSynced(key, destination: destination, receipt: Receipt(remoteName: key.path), size: 1, modificationTime: t0,
                                              sha256: "aa", at: t0)
                    } catch {
                        try? await Task.sleep(for: .milliseconds(50))  // PostgreSQL away: a temporary error, tried again
                    }
                    _ = await ledger.leads("sheet", needsOneWriter: true)
                }
            }
        }
        for round in 1...rounds {
            try await Task.sleep(for: .milliseconds(Int.random(in: 300...1500)))
            // Freeze PostgreSQL's event loop, restart the server meanwhile, and let the loop go.
            let held = PostgresLedgerDatabase.eventLoopGroup.next().submit { usleep(UInt32.random(in: 3_000_000...6_000_000)) }
            server.pause()
            try await server.resume()
            _ = try await held.get()
            print("round \(round): woken")
        }
        try await Task.sleep(for: .seconds(2))
        stop.set()
        for writer in writers { await writer.value }
        // It goes on: a write after the last restart lands.
        var landed = false
        for _ in 0..<40 where !landed {
            landed = await (try? ledger.recordPending([Ledger.Pending(file: FileKey(source: "outbox", path: "last.bin"), destination: "bucket", size: 1,
                                                                 modificationTime: t0, sha256: "aa", contentChanged: false)], at: t0)) != nil
            if !landed { try await Task.sleep(for: .milliseconds(250)) }
        }
        #expect(landed, "the ledger did not come back after the restarts")
    }

    final class Flag: Sendable {
        private let value = Mutex(false)
        var isSet: Bool { value.withLock { $0 } }
        func set() { value.withLock { $0 = true } }
    }
}
