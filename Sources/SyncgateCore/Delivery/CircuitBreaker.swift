import Foundation

/// Stops every upload to one destination once it is found unavailable or blocked, for the rest of a run: a
/// destination-scoped error trips it at once, and so do ``failureStreakLimit`` file-scoped retryable failures in a
/// row, over at least two files, with no success between (several 5xx in a row, every connection reset). Uploads in
/// flight are then ended (``onTrip``) and every file not delivered waits, pending, with no attempt counted.
public final class CircuitBreaker: @unchecked Sendable {
    /// File-scoped retryable failures in a row that make the destination count as unavailable.
    public static let failureStreakLimit = 3

    private let lock = NSLock()
    private var tripped: DeliveryFailure?
    private var streak = 0
    private var streakFiles = Set<FileKey>()
    private var tripHandlers: [@Sendable () -> Void] = []

    public init() {}

    /// The failure that opened the breaker (destination-scoped), or nil while it is closed.
    public var failure: DeliveryFailure? { lock.withLock { tripped } }

    public var isOpen: Bool { failure != nil }

    /// Opens the breaker (the first failure stays the reason) and ends the uploads in flight. Returns the failure in
    /// force.
    @discardableResult
    public func trip(_ failure: DeliveryFailure) -> DeliveryFailure {
        var scoped = failure
        scoped.scope = .destination
        let (reason, handlers): (DeliveryFailure, [@Sendable () -> Void]) = lock.withLock {
            if let tripped { return (tripped, []) }
            tripped = scoped
            defer { tripHandlers.removeAll() }
            return (scoped, tripHandlers)
        }
        for handler in handlers { handler() }
        return reason
    }

    /// Runs `handler` when the breaker trips (at once when it is open already).
    public func onTrip(_ handler: @escaping @Sendable () -> Void) {
        let openAlready: Bool = lock.withLock {
            if tripped != nil { return true }
            tripHandlers.append(handler)
            return false
        }
        if openAlready { handler() }
    }

    /// An attempt at the destination succeeded: the streak of failures ends.
    public func succeeded() {
        lock.withLock {
            streak = 0
            streakFiles.removeAll()
        }
    }

    /// A file-scoped retryable failure. Trips the breaker when it makes ``failureStreakLimit`` in a row over at
    /// least two files; returns the breaker's failure then.
    public func failed(_ file: FileKey, _ failure: DeliveryFailure) -> DeliveryFailure? {
        let trips: Bool = lock.withLock {
            if tripped != nil { return false }
            streak += 1
            streakFiles.insert(file)
            return streak >= CircuitBreaker.failureStreakLimit && streakFiles.count >= 2
        }
        guard trips else { return self.failure }
        var outage = failure
        outage.message = "\(CircuitBreaker.failureStreakLimit) attempts in a row failed and none succeeded; the last: \(failure.message)"
        return trip(outage)
    }
}
