import Foundation

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
public final class VirtualClock: SyncClock, @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date
    private var slept: [Duration] = []

    public init(start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = start }

    public func now() -> Date {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    public func sleep(for duration: Duration) async throws {
        try Task.checkCancellation()
        lock.withLock {
            current += duration.seconds
            slept.append(duration)
        }
        await Task.yield()
    }

    public func advance(by seconds: TimeInterval) {
        lock.lock()
        current += seconds
        lock.unlock()
    }

    /// Every sleep so far, in order.
    public var sleeps: [Duration] {
        lock.lock()
        defer { lock.unlock() }
        return slept
    }
}
