import Foundation
import Logging
import SyncgateCore
import SyncgateJSON

/// The session's two reader threads: answers on the plugin's stdout, its log on stderr (see ``PluginSession``).
extension PluginSession {
    func readAnswers() {
        LineReader.read(process.stdout, line: { line in
            if line.isEmpty { return true }
            return handle(line)
        }, tooLong: {
            end(PluginGone(message: "\(label) \(PluginViolation.tooLong); killed it"), kill: true)
        })
        let status = process.reap(within: .seconds(2))
        exited.open()
        // Its last lines (the reason it crashed, most likely) may still be on their way through the other pipe.
        waitForLog()
        let log = lastLog
        let tail = log.isEmpty ? "" : "; its last log line: \(Redactor.shared.snippet(log, limit: 300))"
        end(PluginGone(message: "\(label) exited (\(status))\(tail)"), kill: false)
    }

    /// What an answer's id stands for.
    private enum Answered {
        /// The session ended: the line is not looked at.
        case ended
        /// A request cancelled: its late answer is dropped.
        case cancelled
        case request(Waiter)
        /// A request answered already (what it was).
        case answered(String)
        /// No request has that id.
        case unknown
    }

    /// Hands the answers of one line (one, or a batch's, in order) to their requests; false (and the plugin killed)
    /// when the line breaks the protocol. A batch that breaks the framing is refused whole, before any of it is handled.
    private func handle(_ line: ArraySlice<UInt8>) -> Bool {
        let answers: [PluginAnswer]
        do {
            answers = try PluginFraming.answers(line, batched: outbox.batched)
        } catch {
            end(PluginGone(message: "\(label) \(error); killed it"), kill: true)
            return false
        }
        for answer in answers where !handle(answer) { return false }
        return true
    }

    /// Hands one answer to its request; false (and the plugin killed) when it breaks the protocol.
    private func handle(_ answer: PluginAnswer) -> Bool {
        let id = answer.id
        let found: Answered = state.withLock { state in
            if state.ended != nil { return .ended }
            if let request = state.inFlight[id] {
                if answer.isFinal {
                    state.inFlight[id] = nil
                    state.answered[id] = request.waiter.what
                    if state.answered.count > 512 {
                        // The 256 latest kept: pruned in bulk, not one min() per answer.
                        let latest = Set(state.answered.keys.sorted().suffix(256))
                        state.answered = state.answered.filter { latest.contains($0.key) }
                    }
                } else if request.lastHeard != nil {
                    state.inFlight[id]?.lastHeard = .now
                }
                return .request(request.waiter)
            } else if state.cancelled.contains(id) {
                if answer.isFinal { state.cancelled.remove(id) }
                return .cancelled
            } else if let what = state.answered[id] {
                return .answered(what)
            }
            return .unknown
        }
        let waiter: Waiter
        switch found {
        case .ended: return false
        case .cancelled: return true
        case .request(let found): waiter = found
        case .answered(let what):
            end(PluginGone(message: "\(label) \(PluginViolation.answeredTwice(id, what)); killed it"), kill: true)
            return false
        case .unknown:
            end(PluginGone(message: "\(label) \(PluginViolation.wrongID(id)); killed it"), kill: true)
            return false
        }
        switch answer {
        case .progress(_, let bytes): waiter.progress?(bytes)
        case .want(_, let bytes):
            guard waiter.paces else {
                end(PluginGone(message: "\(label) broke the protocol: a want belongs to a put, not \(waiter.what); killed it"), kill: true)
                return false
            }
            want(id, bytes, waiter: waiter)
        case .entry(_, let entry):
            guard let sink = waiter.entry else {
                end(PluginGone(message: "\(label) broke the protocol: an entry answers only a list, not \(waiter.what); killed it"), kill: true)
                return false
            }
            if let stop = sink(entry) { cancel(id, with: stop) }
        case .ok(_, let value): waiter.complete(.success(value))
        case .error(_, let body): waiter.complete(.failure(body))
        }
        return true
    }

    /// Forwards the plugin's stderr to syncgate's log, a line at a time (cut at 2,000 characters, redacted): at
    /// most 100 lines in 10 s; past that lines are counted and dropped, and the count is said once the flood ends.
    func forwardLog() {
        var windowStart = ContinuousClock.now
        var inWindow = 0
        var dropped = 0
        let limit = 100
        LineReaderLoose.read(process.stderr, limit: 8 * 1024) { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            state.withLock { state in
                state.lastLogLine = String(text.prefix(2000))
                state.logBytes += bytes.count + 1
            }
            let now = ContinuousClock.now
            if now - windowStart >= .seconds(10) {
                if dropped > 0 { logger.warning("\(label): \(dropped) log lines dropped (the plugin logs too much)") }
                windowStart = now
                inWindow = 0
                dropped = 0
            }
            inWindow += 1
            if inWindow > limit {
                dropped += 1
                return
            }
            let (level, message) = PluginSession.level(of: text)
            logger.log(level: level, "\(label): \(Redactor.shared.snippet(message, limit: 2000))")
        }
        if dropped > 0 { logger.warning("\(label): \(dropped) log lines dropped (the plugin logs too much)") }
        logRead.open()
    }

    /// A log line's level from its first word (`ERROR`, `WARN`/`WARNING`, `INFO`, `DEBUG`, with or without a
    /// colon); a line without one is a warning.
    static func level(of line: String) -> (Logger.Level, String) {
        let trimmed = line.drop { $0 == " " }
        let word = trimmed.prefix { $0.isLetter }.uppercased()
        let levels: [String: Logger.Level] = ["ERROR": .error, "WARN": .warning, "WARNING": .warning, "INFO": .info, "DEBUG": .debug]
        guard let level = levels[word] else { return (.warning, line) }
        var rest = trimmed.dropFirst(word.count)
        if rest.first == ":" { rest = rest.dropFirst() }
        if !rest.isEmpty && rest.first != " " { return (.warning, line) }
        return (level, String(rest.drop { $0 == " " }))
    }
}
