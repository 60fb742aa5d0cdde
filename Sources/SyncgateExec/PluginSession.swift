import Foundation
import Logging
import SyncgateCore
import SyncgateJSON

/// Why a plugin's session ended before a request was answered: the message names the plugin.
struct PluginGone: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// One running plugin and its requests in flight: sends each request as one line with a fresh id, and hands the
/// answers the reader thread takes from its stdout to the request they answer. A plugin that breaks the protocol
/// (a line that is not JSON, one over 1 MiB, an answer to an id not in flight), that does not end a cancelled
/// request within the grace, or that leaves a request without a word for its answer timeout is killed; every
/// request in flight then fails with an error naming it, and the host starts it again when next needed.
final class PluginSession: @unchecked Sendable {
    let process: PluginProcess
    /// "plugin 'syncgate-destination-webhook'": for messages.
    let label: String
    let logger: Logger
    let cancelGrace: Duration
    private let onEnd: @Sendable (PluginSession, _ expected: Bool) -> Void

    private let lock = NSLock()
    private var nextID = 0
    private var inFlight: [Int: Waiter] = [:]
    /// Requests cancelled and not yet ended by the plugin: its late answers to them are dropped.
    private var cancelled: Set<Int> = []
    private var ended: PluginGone?
    private var closing = false
    private var lastLogLine = ""

    final class Waiter: @unchecked Sendable {
        let what: String
        let progress: (@Sendable (Int64) -> Void)?
        /// Takes a listed entry; an error it returns stops the listing (cancelled, failing with it).
        let entry: (@Sendable (RemoteListing.Entry) -> (any Error)?)?
        let complete: @Sendable (Result<JSONValue, any Error>) -> Void
        /// When the plugin last said something about the request (nil: no answer timeout applies).
        var lastHeard: ContinuousClock.Instant?
        let idleLimit: Duration?
        /// When the request fails with ``PluginTimeout`` if still unanswered (nil: never), and that limit.
        var deadline: ContinuousClock.Instant?
        var deadlineLimit: Duration?

        init(what: String, idleLimit: Duration?, progress: (@Sendable (Int64) -> Void)?, entry: (@Sendable (RemoteListing.Entry) -> (any Error)?)?,
             complete: @escaping @Sendable (Result<JSONValue, any Error>) -> Void) {
            self.what = what
            self.idleLimit = idleLimit
            self.progress = progress
            self.entry = entry
            self.complete = complete
            lastHeard = idleLimit == nil ? nil : .now
        }
    }

    init(process: PluginProcess, label: String, logger: Logger, cancelGrace: Duration,
         onEnd: @escaping @Sendable (PluginSession, Bool) -> Void) {
        self.process = process
        self.label = label
        self.logger = logger
        self.cancelGrace = cancelGrace
        self.onEnd = onEnd
        let out = Thread { [self] in readAnswers() }
        out.name = "syncgate-plugin-out"
        out.start()
        let err = Thread { [self] in forwardLog() }
        err.name = "syncgate-plugin-log"
        err.start()
        timer.setEventHandler { [weak self] in self?.sweep() }
        timer.schedule(deadline: .now() + .milliseconds(50), repeating: .milliseconds(50), leeway: .milliseconds(20))
        timer.resume()
    }

    private let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global())

    var isEnded: Bool { lock.withLock { ended != nil } }

    /// The last line the plugin wrote to its log, for messages ("" when none).
    var lastLog: String { lock.withLock { lastLogLine } }

    // MARK: Requests

    /// Sends a request and waits for its final answer (`ok`'s value; an `error` throws ``PluginErrorBody``). The
    /// task's cancellation sends `cancel` and returns at once with `CancellationError`; the plugin must end the
    /// request within the cancel grace or it is taken for hung and killed. `idleLimit`: the most the plugin may stay
    /// silent about the request.
    func request(
        _ op: String, _ fields: [String: JSONValue], what: String, idleLimit: Duration? = nil, deadline: Duration? = nil,
        progress: (@Sendable (Int64) -> Void)? = nil, entry: (@Sendable (RemoteListing.Entry) -> (any Error)?)? = nil
    ) async throws -> JSONValue {
        let box = CancelBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<JSONValue, any Error>) in
                let once = Once(continuation)
                let waiter = Waiter(what: what, idleLimit: idleLimit, progress: progress, entry: entry) { once.resume($0) }
                if let deadline {
                    waiter.deadline = .now + deadline
                    waiter.deadlineLimit = deadline
                }
                send(op, fields, waiter: waiter, box: box)
            }
        } onCancel: {
            if let id = box.cancel() { self.cancel(id) }
        }
    }

    /// ``request(_:_:what:idleLimit:progress:entry:)`` for a thread that may block (starting a plugin): waits at
    /// most `timeout`, then takes the plugin for hung.
    func requestBlocking(_ op: String, _ fields: [String: JSONValue], what: String, timeout: Duration) throws -> JSONValue {
        let semaphore = DispatchSemaphore(value: 0)
        let result = ResultBox()
        let waiter = Waiter(what: what, idleLimit: nil, progress: nil, entry: nil) { outcome in
            result.set(outcome)
            semaphore.signal()
        }
        send(op, fields, waiter: waiter, box: CancelBox())
        if semaphore.wait(timeout: .now() + timeout.seconds) == .timedOut {
            end(PluginGone(message: "\(label) did not answer \(what) within \(timeout.syncgateText); killed it"), kill: true)
            semaphore.wait()
        }
        return try result.get()
    }

    private func send(_ op: String, _ fields: [String: JSONValue], waiter: Waiter, box: CancelBox) {
        let id: Int
        do {
            lock.lock()
            if let ended {
                lock.unlock()
                waiter.complete(.failure(ended))
                return
            }
            nextID += 1
            id = nextID
            inFlight[id] = waiter
            lock.unlock()
        }
        if box.register(id) {
            // Cancelled before it was sent: it never reaches the plugin.
            let waiter = lock.withLock { inFlight.removeValue(forKey: id) }
            waiter?.complete(.failure(CancellationError()))
            return
        }
        var message = fields
        message["id"] = .int(id)
        message["op"] = .string(op)
        var line = JSONText.compact(.object(sorting: message), sortedKeys: true)
        line += "\n"
        do {
            try process.write(Array(line.utf8))
        } catch {
            switch error {
            case .closed:
                // The reader thread sees the exit and fails every request with its status.
                return
            case .notReading(let seconds):
                end(PluginGone(message: "\(label) has not read its input for \(seconds) s; killed it"), kill: true)
                return
            }
        }
    }

    /// Sends `cancel` for a request in flight and fails it at once with `error` (`CancellationError`).
    private func cancel(_ id: Int, with error: any Error = CancellationError()) {
        let waiter: Waiter? = lock.withLock {
            guard let waiter = inFlight.removeValue(forKey: id) else { return nil }
            if ended == nil { cancelled.insert(id) }
            return waiter
        }
        guard let waiter else { return }
        waiter.complete(.failure(error))
        let line = JSONText.compact(["op": "cancel", "id": .int(id)], sortedKeys: true) + "\n"
        try? process.write(Array(line.utf8), patience: .seconds(1))
        let grace = cancelGrace
        DispatchQueue.global().asyncAfter(deadline: .now() + grace.seconds) { [self] in
            let stillRunning = lock.withLock { cancelled.contains(id) }
            if stillRunning {
                end(PluginGone(message: "\(label) did not end the cancelled \(waiter.what) within \(grace.syncgateText) (hung?); killed it"), kill: true)
            }
        }
    }

    /// Ends requests past their deadline (cancelled, failing with ``PluginTimeout``) and takes the plugin for hung
    /// when it left a request without a word for its idle limit. One timer per plugin, every 50 ms: requests in
    /// flight are few (the destination's concurrency), and a timer per request would pile up at thousands of files a
    /// second.
    private func sweep() {
        let now = ContinuousClock.now
        var expired: [(Int, Waiter)] = []
        var silent: Waiter?
        lock.withLock {
            for (id, waiter) in inFlight {
                if let deadline = waiter.deadline, deadline <= now {
                    expired.append((id, waiter))
                } else if let heard = waiter.lastHeard, let limit = waiter.idleLimit, now - heard >= limit {
                    silent = waiter
                }
            }
        }
        for (id, waiter) in expired {
            cancel(id, with: PluginTimeout(message: "\(label) did not answer \(waiter.what) within \((waiter.deadlineLimit ?? .zero).syncgateText)"))
        }
        if let silent, let limit = silent.idleLimit {
            end(PluginGone(message: "\(label) did not answer \(silent.what) within \(limit.syncgateText) (hung?); killed it"), kill: true)
        }
    }

    // MARK: Ending

    /// Ends the session: every request in flight fails with `reason`; `kill` also kills the plugin.
    func end(_ reason: PluginGone, kill: Bool) {
        let taken: (waiters: [Waiter], expected: Bool)? = lock.withLock {
            guard ended == nil else { return nil }
            ended = reason
            let waiters = Array(inFlight.values)
            inFlight.removeAll()
            cancelled.removeAll()
            return (waiters, closing)
        }
        guard let taken else { return }
        timer.cancel()
        if kill { process.kill() }
        if !taken.expected { logger.error("\(reason.message)") }
        for waiter in taken.waiters { waiter.complete(.failure(reason)) }
        onEnd(self, taken.expected)
    }

    /// Closes the plugin's stdin: it is expected to exit (its exit is then not an error).
    func closeInput() {
        lock.withLock { closing = true }
        process.closeInput()
    }

    /// Closes the plugin's stdin and waits up to `grace` for it to exit, then kills it.
    func close(grace: Duration) {
        closeInput()
        let deadline = ContinuousClock.now + grace
        while !isEnded && ContinuousClock.now < deadline { usleep(5_000) }
        if !isEnded {
            end(PluginGone(message: "\(label) was stopped"), kill: true)
        }
    }

    // MARK: The reader threads

    private func readAnswers() {
        LineReader.read(process.stdout, line: { line in
            if line.isEmpty { return true }
            return handle(line)
        }, tooLong: {
            end(PluginGone(message: "\(label) \(PluginViolation.tooLong); killed it"), kill: true)
        })
        let status = process.reap(within: .seconds(2))
        let log = lastLog
        let tail = log.isEmpty ? "" : "; its last log line: \(Redactor.shared.snippet(log, limit: 300))"
        end(PluginGone(message: "\(label) exited (\(status))\(tail)"), kill: false)
    }

    /// Hands one answer to its request; false (and the plugin killed) when the line breaks the protocol.
    private func handle(_ line: ArraySlice<UInt8>) -> Bool {
        let answer: PluginAnswer
        do {
            answer = try PluginAnswer.parse(line)
        } catch {
            end(PluginGone(message: "\(label) \(error); killed it"), kill: true)
            return false
        }
        let id = answer.id
        let waiter: Waiter?
        do {
            lock.lock()
            defer { lock.unlock() }
            if ended != nil { return false }
            if let found = inFlight[id] {
                waiter = found
                if answer.isFinal { inFlight[id] = nil } else if found.lastHeard != nil { found.lastHeard = .now }
            } else if cancelled.contains(id) {
                if answer.isFinal { cancelled.remove(id) }
                return true
            } else {
                waiter = nil
            }
        }
        guard let waiter else {
            end(PluginGone(message: "\(label) \(PluginViolation.wrongID(id)); killed it"), kill: true)
            return false
        }
        switch answer {
        case .progress(_, let bytes): waiter.progress?(bytes)
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
    private func forwardLog() {
        var windowStart = ContinuousClock.now
        var inWindow = 0
        var dropped = 0
        let limit = 100
        LineReaderLoose.read(process.stderr, limit: 8 * 1024) { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            lock.withLock { lastLogLine = String(text.prefix(2000)) }
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

/// Reads lines for a log: a line longer than `limit` is cut into pieces rather than refused.
enum LineReaderLoose {
    static func read(_ fd: Int32, limit: Int, line: (ArraySlice<UInt8>) -> Void) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                break
            }
            if n == 0 { break }
            buffer.append(contentsOf: chunk[0..<n])
            var start = 0
            while let newline = buffer[start...].firstIndex(of: 0x0A) {
                var end = newline
                if end > start && buffer[end - 1] == 0x0D { end -= 1 }
                line(buffer[start..<end])
                start = newline + 1
            }
            while buffer.count - start > limit {
                line(buffer[start..<(start + limit)])
                start += limit
            }
            if start > 0 { buffer.removeFirst(start) }
        }
        if !buffer.isEmpty { line(buffer[...]) }
    }
}
