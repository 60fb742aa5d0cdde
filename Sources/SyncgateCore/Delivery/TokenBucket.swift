import Foundation
import Synchronization

/// A token bucket whose callers take their place in line: ``reserve(_:at:)`` counts the units (requests, bytes)
/// at once and hands back a ticket, and the holder goes once the bucket has filled up to it (``delay(for:at:)``,
/// ``take(_:clock:cancellation:whileWaiting:)``). Tokens come in at the rate in force (which may change with the
/// time of day and may be unlimited for a while); an idle bucket holds at most `capacity` of them, which is what
/// may go at once after a quiet spell. A caller may take more than the capacity (a chunk of a file larger than
/// the burst): it waits as long as its units take at the rate. Reservations are served in the order they were
/// made, whatever the number of tasks waiting.
///
/// Internally two running totals: the units reserved so far, and the units the bucket has let through by
/// `last` (grown at the rate, capped at reserved + capacity while nobody waits). A ticket is the reserved total
/// just after its own units; it may go once the allowance reaches it.
public final class TokenBucket: Sendable {
    /// Units per second at a time; nil: no limit then.
    let rate: @Sendable (Date) -> Double?
    /// When the rate changes next after a time (nil: never).
    let nextChange: @Sendable (Date) -> Date?
    /// Units an idle bucket holds at a rate.
    let capacity: @Sendable (Double) -> Double

    private struct State {
        var reserved: Double = 0
        var allowance: Double = 0
        var last: Date?
        /// Whether the last rate in force was no limit at all.
        var unlimitedSpell = false
        /// Reservations that had to wait (for tests and figures).
        var waits = 0
    }

    private let state = Mutex(State())

    public init(rate: @escaping @Sendable (Date) -> Double?, nextChange: @escaping @Sendable (Date) -> Date? = { _ in nil },
                capacity: @escaping @Sendable (Double) -> Double) {
        self.rate = rate
        self.nextChange = nextChange
        self.capacity = capacity
    }

    /// `perSecond` units a second, `burst` at once after a quiet spell.
    public convenience init(perSecond: Double, burst: Double) {
        self.init(rate: { _ in perSecond }, capacity: { _ in burst })
    }

    /// A byte rate that follows `schedule`; an idle bucket holds `burstSeconds` of the rate in force.
    public convenience init(schedule: BandwidthSchedule, burstSeconds: Double) {
        self.init(rate: { date in schedule.bytesPerSecond(at: date).map { Double($0) } },
                  nextChange: { schedule.nextChange(after: $0) }, capacity: { $0 * burstSeconds })
    }

    /// Counts `units` at `now`; returns the ticket to wait for.
    public func reserve(_ units: Double, at now: Date) -> Double {
        state.withLock { state in
            advance(&state, to: now)
            state.reserved += units
            return state.reserved
        }
    }

    /// How long the holder of `ticket` still waits at `now` (nil: it may go). The wait never reaches past the next
    /// change of rate, so a waiter looks again when a timetable switches.
    public func delay(for ticket: Double, at now: Date) -> Duration? {
        state.withLock { state in
            advance(&state, to: now)
            if state.allowance >= ticket { return nil }
            // A rate is in force: an unlimited spell lets everything reserved through (see advance).
            let rate = self.rate(now) ?? .infinity
            var seconds = (ticket - state.allowance) / rate
            // Within a microsecond (what a `Date` far from 1970 resolves): go.
            if seconds <= 1e-6 { return nil }
            if let change = nextChange(now) { seconds = min(seconds, change.timeIntervalSince(now)) }
            return .microseconds(max(1, Int64((seconds * 1_000_000).rounded(.up))))
        }
    }

    /// Reserves `units` and waits for them, on `clock`, checking `cancellation` at least every second.
    /// `whileWaiting(true)` is called before the wait and `whileWaiting(false)` after it (only when there is one).
    /// Throws `CancellationError` when the task or `cancellation` is cancelled while it waits.
    public func take(
        _ units: Double, clock: any SyncClock, cancellation: CancellationHandle? = nil,
        whileWaiting: (Bool) -> Void = { _ in }
    ) async throws {
        let ticket = reserve(units, at: clock.now())
        guard var wait = delay(for: ticket, at: clock.now()) else { return }
        state.withLock { $0.waits += 1 }
        whileWaiting(true)
        defer { whileWaiting(false) }
        while true {
            if cancellation?.isCancelled == true { throw CancellationError() }
            try await clock.sleep(for: min(wait, .seconds(1)))
            guard let next = delay(for: ticket, at: clock.now()) else { return }
            wait = next
        }
    }

    /// How many ``take(_:clock:cancellation:whileWaiting:)`` calls had to wait.
    public var waitCount: Int { state.withLock { $0.waits } }

    /// Grows the allowance from `last` to `now`, piece by piece between changes of rate. Called with the state
    /// held (inside `state.withLock`).
    private func advance(_ state: inout State, to now: Date) {
        guard var time = state.last else {
            state.last = now
            state.allowance = rate(now).map(capacity) ?? state.reserved
            state.unlimitedSpell = rate(now) == nil
            return
        }
        if now < time {
            // The clock went back: start counting from here (nothing is owed for the lost time).
            state.last = now
            return
        }
        while time < now {
            let end = min(now, nextChange(time) ?? now)
            settle(&state, rate: rate(time))
            if let rate = rate(time) {
                state.allowance = min(state.allowance + rate * end.timeIntervalSince(time), state.reserved + capacity(rate))
            }
            time = end > time ? end : now
        }
        settle(&state, rate: rate(now))
        state.last = now
    }

    /// While there is no limit everything reserved may go; once a limit comes back, the bucket starts full.
    private func settle(_ state: inout State, rate: Double?) {
        if let rate {
            if state.unlimitedSpell { state.allowance = max(state.allowance, state.reserved + capacity(rate)) }
            state.unlimitedSpell = false
        } else {
            state.allowance = max(state.allowance, state.reserved)
            state.unlimitedSpell = true
        }
    }
}
