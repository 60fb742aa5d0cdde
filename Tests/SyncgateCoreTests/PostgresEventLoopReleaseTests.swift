import Foundation
import NIOPosix
import Synchronization
@testable import SyncgateCore
import SyncgateTestSupport
import Testing

/// A PostgreSQL state lock whose last reference goes on an event loop's thread, where SwiftNIO forbids waiting
/// (`wait()` there is a precondition failure: the process dies with SIGILL). It happened to an instance woken after
/// a freeze across a PostgreSQL restart: the lock connection's end handler ran on its event loop while the
/// instance, its fence lapsed, let go of the lock, and the handler's reference was the last. Releasing the lock
/// there must neither wait nor crash, and the lock must still end (the session closes, the server drops it).
@Suite("PostgreSQL: nothing waits on an event loop's thread")
struct PostgresEventLoopReleaseTests {
    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)), .timeLimit(.minutes(30)))
    func aStateLockLetGoOnAnEventLoopEndsWithoutWaiting() async throws {
        try await PostgresTestServer.withDatabase { url, _ in
            let location = try PostgresStateLocation.parse(url)
            let state = StateLocation.postgres(location)
            let held = Mutex<StateLock?>(StateLock(state: state))
            try held.withLock { try $0?.acquire(gateway: false) }
            #expect(PostgresStateLock.holder(of: location) == "pid \(getpid())")

            // The last reference dropped on one of SwiftNIO's event loop threads (the lock's own loop, and any
            // other: SwiftNIO forbids waiting on both).
            for loop in [PostgresLedgerDatabase.eventLoopGroup.next(), MultiThreadedEventLoopGroup.singleton.next()] {
                try await loop.submit { held.withLock { $0 = nil } }.get()
                // The lock ends with its session: another instance can take it.
                let again = StateLock(state: state)
                let deadline = Date().addingTimeInterval(60)
                var taken = false
                while !taken, Date() < deadline {
                    taken = (try? again.acquire(gateway: false)) != nil
                    if !taken { try await Task.sleep(for: .milliseconds(50)) }
                }
                #expect(taken, "the lock let go on an event loop was never released")
                held.withLock { $0 = again }
            }
            held.withLock { $0 = nil }
        }
    }

    /// The blocking helpers refuse to wait on an event loop's thread instead of crashing the process: a statement
    /// asked there fails with an error, and a lock connection is closed without waiting.
    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)), .timeLimit(.minutes(30)))
    func aStatementAskedOnAnEventLoopFailsInsteadOfWaiting() async throws {
        try await PostgresTestServer.withDatabase { url, _ in
            let location = try PostgresStateLocation.parse(url)
            let configuration = try PostgresLedgerDatabase.configuration(location, applicationName: "syncgate event-loop test")
            let connection = try PostgresLedgerDatabase.connect(location, configuration: configuration, id: 7, logger: PostgresLedgerDatabase.lockLogger)
            let failed: String = try await connection.eventLoop.submit {
                do {
                    _ = try PostgresDeadlines.ledger.run("SELECT 1", on: connection, logger: PostgresLedgerDatabase.lockLogger)
                    return "answered"
                } catch {
                    return String(describing: error)
                }
            }.get()
            #expect(failed.contains("event loop"), "\(failed)")
            // Still usable off the loop.
            #expect(try PostgresDeadlines.ledger.run("SELECT 1", on: connection, logger: PostgresLedgerDatabase.lockLogger).rows.first?.decode(Int.self) == 1)
            try await connection.eventLoop.submit {
                PostgresLedgerDatabase.unlockAndClose(connection, unlock: "SELECT pg_advisory_unlock_all()")
            }.get()
            try await connection.closeFuture.get()
            #expect(connection.isClosed)
        }
    }
}
