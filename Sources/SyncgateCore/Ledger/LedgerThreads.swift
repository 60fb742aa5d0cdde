import NIOPosix
import Synchronization

/// The threads a ledger's transactions run on when async code asks for them (``Ledger/read(_:)``,
/// ``Ledger/write(notify:_:)``): a few threads made to block, never the cooperative pool's, whose threads (two on a
/// 2-core machine) the uploads, the status page and every other task share. A transaction is a short synchronous
/// body written once for both engines (SQLite through GRDB, PostgreSQL round trips awaited on this thread); the
/// task that asked is suspended meanwhile, not its thread.
///
/// Eight threads: SQLite reads from up to three connections beside its one writer, and PostgreSQL writes of one
/// process go one at a time (``PostgresLedgerDatabase/write(durable:_:)``) beside its reads; the rest are for
/// transactions that wait (for the writer, or for a PostgreSQL that is slow to answer) while a status page still
/// reads. A transaction asked for while all eight are busy waits its turn without holding a thread.
enum LedgerThreads {
    static let pool: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: 8)
        pool.start()
        return pool
    }()

    /// Runs `body` on one of the ledger's threads and returns its result. A cancelled task's transaction runs all
    /// the same (unlike `NIOThreadPool.runIfActive`, which drops it): what an interrupted run records (its files
    /// set back to pending, its outcomes so far) is written on the way out.
    ///
    /// `body` (and what it holds: a ledger) is let go before the caller resumes, so that a ledger its caller drops
    /// right after the call is closed at once, as it would be without the hop.
    static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let work = Work(body)
        return try await withCheckedThrowingContinuation { continuation in
            pool.submit { state in
                switch state {
                case .active: continuation.resume(with: work.run())
                case .cancelled: continuation.resume(throwing: CancellationError())  // the pool was shut down
                }
            }
        }
    }

    /// A body run once, then let go.
    private final class Work<T: Sendable>: Sendable {
        private let body: Mutex<(@Sendable () throws -> T)?>
        init(_ body: @escaping @Sendable () throws -> T) { self.body = Mutex(body) }
        func run() -> Result<T, any Error> {
            guard let body = body.withLock({ body in defer { body = nil }; return body }) else { return .failure(CancellationError()) }
            return Result(catching: body)
        }
    }
}
