import Foundation
import Synchronization

/// The state ledger: one row per (source file, destination), written before any upload starts and after every
/// step, so that a crash at any moment leaves a state the next run resumes from. Readable by `syncgate status` from
/// another process while a sync runs. Kept in SQLite (WAL; the default, a file beside the config) or in PostgreSQL
/// (`state: postgres://...`), behind one ``LedgerDatabase``: the same statements, the same schema and versions.
public final class Ledger: Sendable {
    /// The state file's path, or a PostgreSQL state's URL without its password (what messages show).
    public let path: String
    /// Where the ledger is.
    public let state: StateLocation
    let database: any LedgerDatabase
    /// What opening did to the schema (created, upgraded, found current): what `syncgate migrate` reports.
    public let schemaChange: SchemaChange
    /// Fired after each commit of this process that changes what `status` reads (see ``commits()``).
    private let committed = CommitSignal()
    /// The runs to stop at once when the state file is found deleted or replaced (``stoppingOnLoss(_:_:)``).
    private let stopOnLoss = Mutex<[CancellationHandle]>([])

    static let format = "syncgate-ledger"
    /// The schema this syncgate writes. Versions 1 (files only), 2 (destination states), 3 (resumable uploads), 4
    /// (removals) and 5 (claims with leases, and the instances of a fleet) are upgraded in place (6: a destination's
    /// Retry-After, source roots, the remote deletions' window; 7: the leaders' epochs; 8: the last verification per
    /// destination; 9: where each destination's copies go); a newer one is refused.
    public static let schemaVersion = 9
    /// Who this ledger's claims are made by (`claimed_by`): the host, the process and a random suffix, so that a
    /// restarted process with a reused pid is another instance.
    public let instanceID: String
    /// How long a claim holds without being renewed (``LeaseKeeper`` renews this instance's claims every quarter of
    /// it; past two thirds of it without a renewal the instance stops sending, see ``LeaseFence``).
    public let leaseSeconds: Double
    /// Whether other instances may work on this ledger at the same time (PostgreSQL): claims of others are then
    /// respected until their lease ends. An SQLite state has one instance at a time (its lock file), whose claims
    /// are written the same way but never stand in its own way.
    public var sharesWork: Bool { database.dialect.isPostgres }
    let leases: LeaseKeeper
    /// Rows taken over from gone instances, still to be looked for at their destination before they are sent.
    let takenOver = TakenOverRows()
    /// Per destination, the last view of the fleet whose share this instance walked (``lastWalkedViews``).
    let walkedViews = WalkedViews()
    /// The destinations this instance leads on a shared ledger (nil on SQLite, where the one instance leads all).
    let leadership: DestinationLeadership?

    /// Opens (creating if needed) the SQLite ledger at `path`. A file that is not SQLite, is damaged, or belongs to
    /// another program is reported, never replaced.
    public convenience init(path: String) throws {
        try self.init(state: .sqlite(path: path))
    }

    /// Opens the ledger where `state` says, creating or upgrading its schema in place. A database of another
    /// program, or of a newer syncgate, is reported and left untouched.
    /// `leaseSeconds`: how long this instance's claims hold unless renewed (default: ``defaultLeaseSeconds``).
    /// `statementTimeout`: seconds a PostgreSQL statement may take (default 30, see ``PostgresDeadlines``).
    public init(state: StateLocation, leaseSeconds: Double? = nil, statementTimeout: Double? = nil) throws {
        self.state = state
        self.path = state.displayName
        self.instanceID = Ledger.makeInstanceID()
        self.leaseSeconds = leaseSeconds ?? Ledger.defaultLeaseSeconds
        let displayName = state.displayName
        var change = SchemaChange.current(Ledger.schemaVersion)
        switch state {
        case .sqlite(let path):
            database = try SQLiteLedgerDatabase(path: path) { connection in
                change = try Ledger.checkOrCreateSchema(connection, path: displayName)
            }
        case .postgres(let location):
            var deadlines = PostgresDeadlines.ledger
            if let statementTimeout { deadlines.statement = .milliseconds(Int64(max(0.5, statementTimeout) * 1000)) }
            let postgres = try PostgresLedgerDatabase(location: location, applicationName: "syncgate ledger pid \(getpid())", deadlines: deadlines)
            do {
                change = try postgres.write(durable: true) { connection in try Ledger.checkOrCreateSchema(connection, path: displayName) }
            } catch {
                postgres.close()
                throw error
            }
            database = postgres
        }
        schemaChange = change
        if case .postgres(let location) = state {
            leadership = DestinationLeadership(location: location, instanceID: instanceID, leaseSeconds: self.leaseSeconds)
        } else {
            leadership = nil
        }
        leases = LeaseKeeper(database: database, instanceID: instanceID, leaseSeconds: self.leaseSeconds, leadership: leadership)
    }

    /// Whether this instance may work on `destination` now: always, unless the ledger is shared and the destination
    /// needs one writer (``Destination/needsOneWriter``), when only its leader may.
    /// Asking takes a round trip to PostgreSQL (the leader's advisory lock), made on the ledger's threads.
    public func leads(_ destination: String, needsOneWriter: Bool) async -> Bool {
        guard needsOneWriter, let leadership else { return true }
        let leads = (try? await offThread { leadership.lead(destination) }) ?? false
        if leads { leases.start() }
        return leads
    }

    /// Whether this instance holds the lead of `destination` now (without trying to take it).
    public func holdsLead(_ destination: String) -> Bool {
        leadership?.holds(destination) ?? false
    }

    /// The epoch of this instance's lead of `destination` (see ``DestinationLeadership``): nil when it does not lead
    /// it, or the ledger is not shared.
    public func leadEpoch(_ destination: String) -> Int64? {
        leadership?.epoch(destination)
    }

    /// How long a new leader of `destination` must wait before it sends: until the lead of the instance that held it
    /// before has surely ended (zero when there was none, it gave the lead up, or this instance does not lead it).
    public func leadReadyIn(_ destination: String) -> Duration {
        leadership?.readyIn(destination) ?? .zero
    }

    deinit {
        leases.stop()
        leaveFleet()
        leadership?.close()
        database.close()
    }

    /// The lease of a claim: 60 s, or `SYNCGATE_LEASE_SECONDS` (the fleet tests shorten it).
    static var defaultLeaseSeconds: Double {
        ProcessInfo.processInfo.environment["SYNCGATE_LEASE_SECONDS"].flatMap(Double.init).map { max(0.5, $0) } ?? 60
    }

    static func makeInstanceID() -> String {
        var name = [CChar](repeating: 0, count: 256)
        let host = gethostname(&name, name.count) == 0
            ? String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "host"
        let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        return "\(host):\(getpid()):\(suffix)"
    }

    /// Throws when the state file was deleted or replaced since it was opened, after saving what this process
    /// holds of it (SQLite; see ``SQLiteLedgerDatabase/checkIdentity()``).
    /// The first to find the loss cancels every run registered with ``stoppingOnLoss(_:_:)``: no new upload starts
    /// for a state nobody will read again.
    func checkIdentity() throws {
        do {
            try database.checkIdentity()
        } catch let error as LedgerError where error.stateLost {
            for cancellation in stopOnLoss.withLock({ $0 }) { cancellation.cancel() }
            throw error
        }
    }

    /// Makes sure, once a run is over, that the state file is still the one this process wrote: a file deleted or
    /// replaced after the run's last write is found here, not only by a write (what this process holds of it is
    /// saved as ``checkIdentity()`` does, and the loss is thrown). Nothing on PostgreSQL.
    public func confirmStateFile() throws {
        try checkIdentity()
    }

    /// Runs `body` with `cancellation` cancelled as soon as a write finds the state file deleted or replaced, as an
    /// interrupt would: uploads in flight get their grace, no new one starts, and the run ends with the loss.
    public func stoppingOnLoss<T>(_ cancellation: CancellationHandle, _ body: () async throws -> T) async throws -> T {
        stopOnLoss.withLock { $0.append(cancellation) }
        defer {
            stopOnLoss.withLock { handles in
                if let index = handles.firstIndex(where: { $0 === cancellation }) { handles.remove(at: index) }
            }
        }
        return try await body()
    }

    // MARK: - Plumbing

    /// A read transaction, run on the ledger's own threads (``LedgerThreads``): the calling task waits, its thread
    /// does not.
    func read<T: Sendable>(_ body: @escaping @Sendable (any LedgerConnection) throws -> T) async throws -> T {
        try await LedgerThreads.run { try self.blockingRead(body) }
    }

    /// A write transaction (see ``blockingWrite(notify:_:)``), run on the ledger's own threads.
    @discardableResult
    func write<T: Sendable>(notify: Bool = true, _ body: @escaping @Sendable (any LedgerConnection) throws -> T) async throws -> T {
        try await LedgerThreads.run { try self.blockingWrite(notify: notify, body) }
    }

    /// A durable write (see ``blockingDurably(_:)``), run on the ledger's own threads.
    @discardableResult
    func durably<T: Sendable>(_ body: @escaping @Sendable (any LedgerConnection) throws -> T) async throws -> T {
        try await LedgerThreads.run { try self.blockingDurably(body) }
    }

    /// Runs blocking ledger work (several blocking calls, or a stream read with a body of the caller's) on the
    /// ledger's own threads.
    func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await LedgerThreads.run(body)
    }

    /// A read on the calling thread, which blocks until it is done: only for code on a thread of its own (the
    /// planning thread, the recorder's queue, ``LedgerThreads``), never for a task of the cooperative pool.
    func blockingRead<T>(_ body: (any LedgerConnection) throws -> T) throws -> T {
        try database.read(body)
    }

    /// Writes in one transaction, then makes sure the file written is still the state file: a write made after it
    /// was deleted or replaced is saved with the rest (``checkIdentity()``), and the caller learns of the loss.
    /// `notify: false` for a write that changes nothing `status` counts (an upload's byte progress). Blocks the
    /// calling thread (see ``blockingRead(_:)``).
    @discardableResult
    func blockingWrite<T>(notify: Bool = true, _ body: (any LedgerConnection) throws -> T) throws -> T {
        let result = try database.write(durable: false, body)
        try checkIdentity()
        if notify { committed.fire() }
        return result
    }

    /// A write made durable before it returns (SQLite syncs its write-ahead log at this commit, where the ledger's
    /// other commits leave that to the next checkpoint; a PostgreSQL commit is durable anyway). Blocks the calling
    /// thread (see ``blockingRead(_:)``).
    @discardableResult
    func blockingDurably<T>(_ body: (any LedgerConnection) throws -> T) throws -> T {
        let result = try database.write(durable: true, body)
        try checkIdentity()
        committed.fire()
        return result
    }

    /// A signal after each commit this process makes to the ledger that changes what ``StatusReport`` reads: the
    /// status page reads the report again on it, since a delivery event reaches it before its batch is written.
    /// Commits close together come as one signal to a listener that has not taken the last one yet. Changes other
    /// processes make are not signalled (see ``changeCounter()``).
    public func commits() -> AsyncStream<Void> { committed.subscribe() }

    /// The columns ``entry(_:)`` reads, in its order (by index: a lookup by name costs more than the read).
    static let columns = "source, path, destination, status, attempts, last_attempt_at, last_error, error_class, error_code, "
        + "next_retry_at, failed_runs, first_failed_at, size, mtime, sha256, receipt, bytes_done, queued_at, synced_at, updated_at, removed, removed_at, "
        + "claimed_by, lease_until"

    /// ``columns`` with NULL for the receipt.
    static let columnsWithoutReceipt = columns.replacingOccurrences(of: "receipt", with: "NULL")

    static func entry(_ row: LedgerRow) -> LedgerEntry {
        func date(_ index: Int) -> Date? { row.double(index).map { Date(timeIntervalSince1970: $0) } }
        let receipt: Receipt? = row.string(15).flatMap { try? JSONDecoder().decode(Receipt.self, from: Data($0.utf8)) }
        return LedgerEntry(
            file: FileKey(source: row.string(0) ?? "", path: row.string(1) ?? ""), destination: row.string(2) ?? "",
            status: row.string(3).flatMap(FileStatus.init(rawValue:)) ?? .pending, attempts: row.int(4) ?? 0,
            lastAttemptAt: date(5), lastError: row.string(6), errorClass: row.string(7).flatMap(FailureClass.init(name:)),
            errorCode: row.string(8), nextRetryAt: date(9), failedRuns: row.int(10) ?? 0,
            firstFailedAt: date(11), size: row.int64(12) ?? 0, modificationTime: date(13) ?? Date(timeIntervalSince1970: 0),
            sha256: row.string(14), receipt: receipt, bytesDone: row.int64(16) ?? 0, queuedAt: date(17),
            syncedAt: date(18), updatedAt: date(19) ?? Date(timeIntervalSince1970: 0),
            removed: row.string(20).flatMap(Removal.init(rawValue:)), removedAt: date(21),
            claimedBy: row.string(22), leaseUntil: date(23)
        )
    }
}
