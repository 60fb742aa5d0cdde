import Foundation
import Synchronization

/// Whether this instance may still act on what it holds in a shared ledger (its claims, its leads), measured on its
/// own monotonic clock (`ContinuousClock`, which a frozen process's sleep does not stop) from the start of its last
/// confirmed renewal. A renewal that started at instant S and succeeded extended the leases to at least S + lease (the
/// server's clock counts from when it ran the statement, after S). The instance holds them until S + (lease -
/// margin), the margin a third of the lease: past that it has *lapsed*, and acts as if it had lost everything it
/// held: no upload starts, those in flight are cut off, still before any lease can end and be taken by another.
///
/// A lapse is counted once (``lapses``): a later successful renewal lets new work start, but work taken before the
/// lapse (``Token``) never goes on, since another instance may have taken it in between.
final class LeaseFence: Sendable {
    let lease: Duration
    /// How long before its lease's end the instance stops acting on it.
    let margin: Duration
    private let state = Mutex(State())

    private struct State {
        var confirmed: ContinuousClock.Instant?
        var lapses = 0
        var lapsed = false
    }

    /// What a run captures when it starts: the fence's lapse count then.
    struct Token: Sendable, Equatable {
        let lapses: Int
    }

    init(leaseSeconds: Double) {
        lease = .milliseconds(Int64(leaseSeconds * 1000))
        margin = lease / 3
    }

    /// How long after a confirmed renewal's start the instance holds.
    var window: Duration { lease - margin }

    /// A renewal that started at `start` succeeded.
    func confirm(since start: ContinuousClock.Instant) {
        state.withLock { state in
            LeaseFence.noteLapse(&state, at: start, window: window)
            if state.confirmed.map({ start > $0 }) ?? true { state.confirmed = start }
            state.lapsed = false
        }
    }

    /// The first claims of this process, written by a statement that started at `start`, count as a renewal when no
    /// renewal was confirmed yet.
    func confirmFirst(since start: ContinuousClock.Instant) {
        let first = state.withLock { $0.confirmed == nil }
        if first { confirm(since: start) }
    }

    private static func noteLapse(_ state: inout State, at now: ContinuousClock.Instant, window: Duration) {
        guard let confirmed = state.confirmed, !state.lapsed, now - confirmed >= window else { return }
        state.lapsed = true
        state.lapses += 1
    }

    /// The token of work started now.
    func token() -> Token {
        let now = ContinuousClock.now
        return state.withLock { state in
            LeaseFence.noteLapse(&state, at: now, window: window)
            return Token(lapses: state.lapses)
        }
    }

    /// Whether work started under `token` may go on now: confirmed within the window, with no lapse since.
    func holds(_ token: Token) -> Bool {
        let now = ContinuousClock.now
        return state.withLock { state in
            LeaseFence.noteLapse(&state, at: now, window: window)
            guard let confirmed = state.confirmed else { return false }
            return !state.lapsed && state.lapses == token.lapses && now - confirmed < window
        }
    }

    /// How long ago the last renewal was confirmed (nil: never).
    func sinceConfirmed() -> Duration? {
        let now = ContinuousClock.now
        return state.withLock { $0.confirmed.map { now - $0 } }
    }
}
