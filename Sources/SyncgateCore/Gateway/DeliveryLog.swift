import Foundation
import Logging
import Synchronization

/// What `syncgate run` logs of its deliveries: each file delivered (info) or failed (warning, with the failure's
/// class and scope), and each change of a destination's state: away (warning) and back (info). A burst is cut short:
/// past ``linesPerSecond`` outcome lines in a second, the rest of that second is counted, not logged, and one
/// summary line says how many of each there were. Fields are typed (``LogFields``), so that `--log-format json`
/// gives a log shipper numbers as numbers.
final class DeliveryLog: Sendable {
    /// Outcome lines logged per second before the rest of the second is summed up.
    static let linesPerSecond = 20

    private let logger: Logger
    private let state = Mutex(State())

    private struct State {
        /// When the current second began (nil: no outcome since the last one ended).
        var windowStart: ContinuousClock.Instant?
        var logged = 0
        /// Outcomes not logged in the current second, by kind (`delivered`, `already_there`, `failed`).
        var held: [String: Int] = [:]
        var flushScheduled = false
        /// Each destination's state as the events showed it (`available` unless its files wait for it).
        var destinations: [String: String] = [:]
    }

    init(logger: Logger) {
        self.logger = logger
    }

    /// A line to write, made under the lock and written after it.
    private struct Line {
        var level: Logger.Level
        var message: String
        var fields: [String: Any]
    }

    func record(_ event: DeliveryEvent) {
        var lines: [Line] = []
        let now = ContinuousClock.now
        var scheduleFlush = false
        var logOutcome = false
        let kind = Self.outcomeKind(event)
        state.withLock { state in
            if let change = Self.stateChange(event, &state.destinations) { lines.append(change) }
            guard let kind else { return }
            if let start = state.windowStart, now - start >= .seconds(1) {
                if let summary = Self.summary(&state.held) { lines.append(summary) }
                state.windowStart = nil
            }
            if state.windowStart == nil {
                state.windowStart = now
                state.logged = 0
            }
            if state.logged < Self.linesPerSecond {
                state.logged += 1
                logOutcome = true
            } else {
                state.held[kind, default: 0] += 1
                if !state.flushScheduled {
                    state.flushScheduled = true
                    scheduleFlush = true
                }
            }
        }
        // The line itself is made only for the outcomes logged one by one (in a burst, most are only counted).
        if logOutcome, let line = Self.outcomeLine(event) { lines.append(line) }
        write(lines)
        if scheduleFlush { self.scheduleFlush() }
    }

    /// Writes the summary of what is held back now (the gateway stops: no outcome goes unlogged).
    func finish() {
        let summary: Line? = state.withLock { state in
            state.windowStart = nil
            return Self.summary(&state.held)
        }
        write(summary.map { [$0] } ?? [])
    }

    /// Writes the summary of a second that ended with outcomes held back (or waits for the end of a newer one).
    private func flush() {
        let now = ContinuousClock.now
        let (summary, again): (Line?, Bool) = state.withLock { state in
            guard let start = state.windowStart, now - start >= .seconds(1) else {
                // A newer second started since: its summary is due at its end.
                state.flushScheduled = !state.held.isEmpty
                return (nil, state.flushScheduled)
            }
            state.flushScheduled = false
            state.windowStart = nil
            return (Self.summary(&state.held), false)
        }
        write(summary.map { [$0] } ?? [])
        if again { scheduleFlush() }
    }

    private func scheduleFlush() {
        Task { [weak self] in
            try? await Task.sleep(for: .seconds(1))
            self?.flush()
        }
    }

    private func write(_ lines: [Line]) {
        for line in lines { logger.log(level: line.level, "\(line.message)", metadata: LogFields.metadata(line.fields)) }
    }

    /// The kind of outcome a file's final event is (`delivered`, `already_there`, `failed`); nil for other events.
    private static func outcomeKind(_ event: DeliveryEvent) -> String? {
        switch event.kind {
        case .synced(_, _, let uploaded): return uploaded ? "delivered" : "already_there"
        case .failed(let failure) where !failure.isCancellation: return "failed"
        case .gone: return "gone"
        default: return nil
        }
    }

    /// The outcome line of a file's final event; nil for other events.
    private static func outcomeLine(_ event: DeliveryEvent) -> Line? {
        var fields = LogFields.file(event)
        switch event.kind {
        case .synced(_, let attempts, let uploaded):
            fields["attempts"] = attempts
            let what = uploaded ? "delivered (\(ByteSize.format(event.size)))" : "already there"
            return Line(level: .info, message: "\(event.destination): \(event.file.path): \(what)", fields: fields)
        case .failed(let failure) where !failure.isCancellation:
            fields.merge(LogFields.failure(failure)) { $1 }
            let message = "\(event.destination): \(event.file.path): failed (\(failure.failureClass.name), \(failure.scope.rawValue)): \(failure.message)"
            return Line(level: .warning, message: message, fields: fields)
        case .gone:
            return Line(level: .info, message: "\(event.destination): \(event.file.path): \(SourceGone.reason)", fields: fields)
        default:
            return nil
        }
    }

    /// The line of a destination whose state the event changes: its files wait for it (unavailable, or blocked
    /// when the failure is permanent), or one of them got through again.
    private static func stateChange(_ event: DeliveryEvent, _ states: inout [String: String]) -> Line? {
        let name = event.destination
        let previous = states[name] ?? "available"
        switch event.kind {
        case .waiting(let failure, _):
            let away = failure.failureClass.isRetryable ? "unavailable" : "blocked"
            guard previous != away else { return nil }
            states[name] = away
            var fields: [String: Any] = ["destination": name, "state": away]
            fields.merge(LogFields.failure(failure)) { $1 }
            fields["attempts"] = nil
            let then = away == "blocked" ? "fix its credentials or settings (or run syncgate retry)" : "its files are sent when it answers"
            return Line(level: .warning, message: "\(name): \(away) (\(failure.message)); \(then)", fields: fields)
        case .synced, .failed:
            // Delivered, or refused for the file's own sake: the destination answered.
            if case .failed(let failure) = event.kind, failure.scope != .file || failure.isCancellation { return nil }
            guard previous != "available" else { return nil }
            states[name] = "available"
            return Line(level: .info, message: "\(name): available again (it was \(previous))", fields: ["destination": name, "state": "available", "was": previous])
        default:
            return nil
        }
    }

    /// The line summing up the outcomes held back (and clearing them); nil when none was.
    private static func summary(_ held: inout [String: Int]) -> Line? {
        guard !held.isEmpty else { return nil }
        defer { held.removeAll() }
        let total = held.values.reduce(0, +)
        let parts = held.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key.replacingOccurrences(of: "_", with: " "))" }
        var fields: [String: Any] = ["files": total]
        for (kind, count) in held { fields[kind] = count }
        return Line(level: (held["failed"] ?? 0) > 0 ? .warning : .info,
                    message: "\(total) more delivery outcome(s) in the last second not logged one by one: \(parts.joined(separator: ", "))",
                    fields: fields)
    }
}
