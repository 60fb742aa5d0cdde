import Foundation
import Synchronization

/// The clock the delivery layer reads and sleeps on for backoff. Injectable, so tests of backoff take no real time.
public protocol SyncClock: Sendable {
    func now() -> Date
    func sleep(for duration: Duration) async throws
}

/// Wall-clock time and real sleeps.
public struct SystemClock: SyncClock {
    public init() {}
    public func now() -> Date { Date() }
    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}

/// A clock whose sleeps return at once and move its time forward, recording every sleep. For tests.
public final class VirtualClock: SyncClock, Sendable {
    private let state: Mutex<(current: Date, slept: [Duration])>

    public init(start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { state = Mutex((start, [])) }

    public func now() -> Date {
        state.withLock { $0.current }
    }

    public func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        state.withLock { state in
            state.current += duration.seconds
            state.slept.append(duration)
        }
        await Task.yield()
    }

    public func advance(by seconds: TimeInterval) {
        state.withLock { $0.current += seconds }
    }

    /// Every sleep so far, in order.
    public var sleeps: [Duration] {
        state.withLock { $0.slept }
    }
}
