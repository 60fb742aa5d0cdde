import Foundation
import Synchronization

/// The operations of a running gateway: ongoing uploads with their progress, recently completed ones (kept for
/// `recent.completed`) and recently failed ones (kept for `recent.failed`, or until the file is delivered). Every change is published on
/// ``changes()`` streams.
public final class OperationList: Sendable {
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

    private let clock: any SyncClock
    private let keepCompleted: @Sendable (String) -> Duration
    private let keepFailed: @Sendable (String) -> Duration
    private let state = Mutex(State())

    private struct State {
        var ongoing: [String: Operation] = [:]
        var completed: [Operation] = []
        var failed: [Operation] = []
        var subscribers: [UUID: AsyncStream<DeliveryEvent>.Continuation] = [:]
    }

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
        state.withLock { $0.subscribers[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Ends every stream (after a run).
    public func close() {
        let list = state.withLock { state -> [AsyncStream<DeliveryEvent>.Continuation] in
            let all = Array(state.subscribers.values)
            state.subscribers.removeAll()
            return all
        }
        for continuation in list { continuation.finish() }
    }

    public func apply(_ event: DeliveryEvent) {
        let key = event.destination + "\u{0}" + event.file.source + "\u{0}" + event.file.path
        let continuations = state.withLock { state -> [AsyncStream<DeliveryEvent>.Continuation] in
            switch event.kind {
            case .started(let attempt):
                state.ongoing[key] = Operation(file: event.file, destination: event.destination, progress: 0, attempts: attempt, error: nil, time: event.time)
            case .progress(let bytes):
                if var op = state.ongoing[key] {
                    op.progress = event.size > 0 ? min(1, Double(bytes) / Double(event.size)) : 0
                    state.ongoing[key] = op
                }
            case .retrying(let attempt, let error, _):
                if var op = state.ongoing[key] {
                    op.progress = 0
                    op.attempts = attempt
                    op.error = error.message
                    state.ongoing[key] = op
                }
            case .synced(_, let attempts, _):
                state.ongoing[key] = nil
                // Delivered after all (a retry): no longer a recent failure.
                state.failed.removeAll { $0.file == event.file && $0.destination == event.destination }
                state.completed.append(Operation(file: event.file, destination: event.destination, progress: 1, attempts: attempts, error: nil, time: event.time))
                if state.completed.count >= 2 * OperationList.recentLimit { Self.trim(&state.completed, keep: keepCompleted, now: clock.now()) }
            case .failed(let failure):
                state.ongoing[key] = nil
                state.failed.append(Operation(file: event.file, destination: event.destination, progress: 0, attempts: failure.attempts, error: failure.message, time: event.time))
                if state.failed.count >= 2 * OperationList.recentLimit { Self.trim(&state.failed, keep: keepFailed, now: clock.now()) }
            case .waiting, .gone:
                state.ongoing[key] = nil
            case .queued, .skipped:
                break
            }
            return Array(state.subscribers.values)
        }
        for continuation in continuations { continuation.yield(event) }
    }

    /// Drops the expired entries, then the oldest beyond ``recentLimit`` (the caller holds the lock).
    private static func trim(_ list: inout [Operation], keep: (String) -> Duration, now: Date) {
        list.removeAll { now.timeIntervalSince($0.time) > keep($0.destination).seconds }
        if list.count > OperationList.recentLimit { list.removeFirst(list.count - OperationList.recentLimit) }
    }

    /// The lists now, with expired entries dropped.
    public func snapshot() -> Snapshot {
        let now = clock.now()
        return state.withLock { state in
            Self.trim(&state.completed, keep: keepCompleted, now: now)
            Self.trim(&state.failed, keep: keepFailed, now: now)
            return Snapshot(
                ongoing: state.ongoing.values.sorted { $0.time < $1.time }, recentlyCompleted: state.completed, recentlyFailed: state.failed
            )
        }
    }
}
