import Foundation

/// The operations of a running gateway: ongoing uploads with their progress, recently completed ones (kept for
/// `recent.completed`) and recently failed ones (kept for `recent.failed`). Every change is published on
/// ``changes()`` streams.
public final class OperationList: @unchecked Sendable {
    /// One file at one destination.
    public struct Operation: Sendable, Hashable {
        public var file: FileKey
        public var destination: String
        /// 0...1
        public var progress: Double
        public var attempts: Int
        public var error: String?
        /// When it started, completed or failed.
        public var time: Date
    }

    public struct Snapshot: Sendable {
        public var ongoing: [Operation]
        public var recentlyCompleted: [Operation]
        public var recentlyFailed: [Operation]
    }

    private let lock = NSLock()
    private let clock: any SyncClock
    private let keepCompleted: @Sendable (String) -> Duration
    private let keepFailed: @Sendable (String) -> Duration
    private var ongoing: [String: Operation] = [:]
    private var completed: [Operation] = []
    private var failed: [Operation] = []
    private var subscribers: [UUID: AsyncStream<DeliveryEvent>.Continuation] = [:]

    /// At most this many recently completed operations stay listed, and as many recently failed ones: the newest.
    /// A first sync settles thousands of files a second; without a bound the lists would hold every file of a
    /// large run until its time ran out.
    public static let recentLimit = 1000

    /// `keepCompleted` / `keepFailed` give each destination's `recent` durations.
    public init(clock: any SyncClock = SystemClock(), keepCompleted: @escaping @Sendable (String) -> Duration = { _ in .seconds(10) },
                keepFailed: @escaping @Sendable (String) -> Duration = { _ in .seconds(60) }) {
        self.clock = clock
        self.keepCompleted = keepCompleted
        self.keepFailed = keepFailed
    }

    /// A stream of every event applied from now on; it ends when the caller stops iterating.
    public func changes() -> AsyncStream<DeliveryEvent> {
        let (stream, continuation) = AsyncStream<DeliveryEvent>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        let id = UUID()
        lock.withLock { subscribers[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.lock.withLock { self.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Ends every stream (after a run).
    public func close() {
        let list = lock.withLock { () -> [AsyncStream<DeliveryEvent>.Continuation] in
            let all = Array(subscribers.values)
            subscribers.removeAll()
            return all
        }
        for continuation in list { continuation.finish() }
    }

    public func apply(_ event: DeliveryEvent) {
        let key = event.destination + "\u{0}" + event.file.source + "\u{0}" + event.file.path
        let continuations = lock.withLock { () -> [AsyncStream<DeliveryEvent>.Continuation] in
            switch event.kind {
            case .started(let attempt):
                ongoing[key] = Operation(file: event.file, destination: event.destination, progress: 0, attempts: attempt, error: nil, time: event.time)
            case .progress(let bytes):
                if var op = ongoing[key] {
                    op.progress = event.size > 0 ? min(1, Double(bytes) / Double(event.size)) : 0
                    ongoing[key] = op
                }
            case .retrying(let attempt, let error, _):
                if var op = ongoing[key] {
                    op.progress = 0
                    op.attempts = attempt
                    op.error = error.message
                    ongoing[key] = op
                }
            case .synced(_, let attempts, _):
                ongoing[key] = nil
                completed.append(Operation(file: event.file, destination: event.destination, progress: 1, attempts: attempts, error: nil, time: event.time))
                if completed.count >= 2 * OperationList.recentLimit { trim(&completed, keep: keepCompleted, now: clock.now()) }
            case .failed(let failure):
                ongoing[key] = nil
                failed.append(Operation(file: event.file, destination: event.destination, progress: 0, attempts: failure.attempts, error: failure.message, time: event.time))
                if failed.count >= 2 * OperationList.recentLimit { trim(&failed, keep: keepFailed, now: clock.now()) }
            case .waiting:
                ongoing[key] = nil
            case .queued, .skipped:
                break
            }
            return Array(subscribers.values)
        }
        for continuation in continuations { continuation.yield(event) }
    }

    /// Drops the expired entries, then the oldest beyond ``recentLimit`` (the caller holds the lock).
    private func trim(_ list: inout [Operation], keep: (String) -> Duration, now: Date) {
        list.removeAll { now.timeIntervalSince($0.time) > keep($0.destination).seconds }
        if list.count > OperationList.recentLimit { list.removeFirst(list.count - OperationList.recentLimit) }
    }

    /// The lists now, with expired entries dropped.
    public func snapshot() -> Snapshot {
        let now = clock.now()
        return lock.withLock {
            trim(&completed, keep: keepCompleted, now: now)
            trim(&failed, keep: keepFailed, now: now)
            return Snapshot(
                ongoing: ongoing.values.sorted { $0.time < $1.time }, recentlyCompleted: completed, recentlyFailed: failed
            )
        }
    }
}
