import Foundation
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// How long a ledger call may wait for PostgreSQL, so that none waits for ever (a server that stalls, a network cut
/// without a reset, a lock held by a stuck session):
/// - the server cancels a statement that runs longer than ``statement`` (`statement_timeout`, set on every session at
///   its start; SQLSTATE 57014), and ends a session idle in a transaction for as long
///   (`idle_in_transaction_session_timeout`);
/// - the client gives each round trip ``statement`` plus ``clientSlack`` and then closes the connection (its answer
///   would come too late to be trusted): the call fails with a temporary ledger error, and the next one connects
///   afresh;
/// - a connection attempt (TCP, TLS, login) has ``connect``;
/// - the server probes an idle client's socket (TCP keepalive, `tcp_keepalives_*`) so that a session whose client is
///   gone ends, and its advisory locks (a leader's) are released, within about ``keepalive`` seconds.
struct PostgresDeadlines: Sendable {
    var statement: Duration
    var connect: Duration
    var clientSlack: Duration = .seconds(5)
    /// Seconds before the server's first keepalive probe; probes then every third of that, 3 of them.
    var keepalive: Int = 10

    /// The round trip's limit on the client's side.
    var roundTrip: Duration { statement + clientSlack }

    /// The ledger's pool: 30 s a statement (`SYNCGATE_PG_STATEMENT_TIMEOUT`, seconds, changes it), 10 s to connect.
    static var ledger: PostgresDeadlines {
        let seconds = ProcessInfo.processInfo.environment["SYNCGATE_PG_STATEMENT_TIMEOUT"].flatMap(Double.init).map { max(0.5, $0) } ?? 30
        return PostgresDeadlines(statement: .milliseconds(Int64(seconds * 1000)), connect: .seconds(10))
    }

    /// The connections that keep a lease or a lead: each call must end well within a renewal's interval.
    static func renewal(interval seconds: Double) -> PostgresDeadlines {
        let limit = min(10, max(1, seconds))
        return PostgresDeadlines(statement: .milliseconds(Int64(limit * 700)), connect: .milliseconds(Int64(limit * 1000)),
                                 clientSlack: .milliseconds(Int64(limit * 300)), keepalive: Int(min(10, max(1, seconds.rounded(.up)))))
    }

    /// The startup parameters that set the server's side of these deadlines on a session.
    var startupParameters: [(String, String)] {
        let ms = String(max(1, statement.milliseconds))
        return [
            ("statement_timeout", ms), ("idle_in_transaction_session_timeout", ms),
            ("tcp_keepalives_idle", String(keepalive)), ("tcp_keepalives_interval", String(max(1, keepalive / 3))),
            ("tcp_keepalives_count", "3"),
        ]
    }

    /// Runs `query` on `connection` and waits for its answer at most ``roundTrip``; past that ``Exceeded`` is thrown
    /// and the connection is closed. The wait ends at the deadline whatever the connection does (a query sent on a
    /// connection the server has just ended may never be answered nor failed).
    /// On one of SwiftNIO's event loop threads, where waiting is forbidden (SwiftNIO stops the process), it throws
    /// ``OnEventLoop`` instead.
    func run(_ query: PostgresQuery, on connection: PostgresConnection, logger: Logger) throws -> PostgresQueryResult {
        guard !PostgresDeadlines.onEventLoop else { throw OnEventLoop() }
        let decided = Flag()
        let limit = roundTrip
        let promise = connection.eventLoop.makePromise(of: PostgresQueryResult.self)
        let timer = connection.eventLoop.scheduleTask(in: .nanoseconds(Int64(limit.milliseconds) * 1_000_000)) {
            if decided.claim() { promise.fail(Exceeded(limit: limit)) }
            connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
        }
        connection.query(query, logger: logger).whenComplete { result in
            timer.cancel()
            if decided.claim() { promise.completeWith(result) }
        }
        return try promise.futureResult.wait()
    }

    /// Whether the calling thread is one of SwiftNIO's event loop threads: a blocking wait there is a precondition
    /// failure (SIGILL). A reference dropped in a connection's callback can end an object whose `deinit` closes a
    /// connection; such paths check this and close without waiting.
    static var onEventLoop: Bool { MultiThreadedEventLoopGroup.currentEventLoop != nil }

    /// A statement asked on an event loop's thread, where syncgate never waits.
    struct OnEventLoop: Error, CustomStringConvertible {
        var description: String { "a PostgreSQL statement was asked on an event loop's thread, where waiting is not allowed" }
    }

    /// A round trip that got no answer within its limit: the connection was closed.
    struct Exceeded: Error, CustomStringConvertible {
        var limit: Duration
        var description: String { "no answer within \(limit.syncgateText); the connection was closed" }
    }

    /// Who decides a round trip: the answer or the deadline, whichever comes first.
    final class Flag: Sendable {
        private let value = Mutex(false)
        /// True for the first caller only.
        func claim() -> Bool {
            value.withLock { taken in
                defer { taken = true }
                return !taken
            }
        }
    }
}

extension Duration {
    /// The whole milliseconds of a duration.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
