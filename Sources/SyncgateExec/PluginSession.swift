import Foundation
import Logging
import SyncgateCore
import Synchronization
import SyncgateJSON

/// One running plugin and its requests in flight: sends each request as one line with a fresh id, and hands the
/// answers the reader thread takes from its stdout to the request they answer. A plugin that breaks the protocol
/// (a line that is not JSON, one over 1 MiB, an answer to an id not in flight), that does not end a cancelled
/// request within the grace, or that leaves a request without a word for its answer timeout is killed; every
/// request in flight then fails with an error naming it, and the host starts it again when next needed.
///
/// When the plugin exits, and when syncgate closes the session, its stderr is read to its end before the end is
/// reported (``waitForLog()``: bounded in time and bytes): its last log lines, and the count of lines dropped, are
/// then in syncgate's log, and its last line in the message saying it exited.
final class PluginSession: Sendable {
    let process: PluginProcess
    /// Its stdin: what several tasks send at once leaves in one write (a batch, when the plugin speaks them).
    let outbox: PluginOutbox
    /// "plugin 'syncgate-destination-webhook'": for messages.
    let label: String
    let logger: Logger
    let cancelGrace: Duration
    private let onEnd: @Sendable (PluginSession, _ expected: Bool) -> Void

    struct State {
        var nextID = 0
        var inFlight: [Int: InFlight] = [:]
        /// Requests cancelled and not yet ended by the plugin: its late answers to them are dropped.
        var cancelled: Set<Int> = []
        var ended: PluginGone?
        var closing = false
        var lastLogLine = ""
        /// Bytes read from the plugin's stderr so far (what ``PluginSession/waitForLog()`` bounds).
        var logBytes = 0
        /// The log was not read to its end by ``PluginSession/waitForLog()`` (said once).
        var logAbandoned = false
        /// The requests answered last (id: what), so that a second answer to one is named as such.
        var answered: [Int: String] = [:]
    }

    /// A request in flight.
    struct InFlight {
        let waiter: Waiter
        /// When the plugin last said something about the request (nil: no answer timeout applies).
        var lastHeard: ContinuousClock.Instant?
        /// Time the request waited for its bandwidth (its `want`s): its deadline moves on by that much.
        var paced: Duration = .zero
        /// A `want` of it waits for its grant (a put asks one piece at a time), and the task waiting for the bandwidth
        /// (cancelled when the request is cancelled or the session ends).
        var wanting = false
        var pacingTask: Task<Void, Never>?
    }

    let state = Mutex(State())
    /// Open once the plugin was reaped (it exited, or was killed and gone) or the session ended.
    let exited = Latch()
    /// Open once the session ended (``end(_:kill:)``).
    private let ended = Latch()
    /// Open once the log forwarder reached the end of the plugin's stderr and said what it had to (the count of
    /// lines dropped).
    let logRead = Latch()
    /// The one timer of ``sweep()``: a Dispatch source (not `Sendable`), made in `init` and then only cancelled.
    private let timer = Mutex<(any DispatchSourceTimer)?>(nil)

    /// How long the plugin's stderr may stay open and quiet (nothing unread in its pipe) once the plugin exited or
    /// was stopped before syncgate stops waiting for its end: a process it started that keeps its stderr open must
    /// not hold up syncgate.
    static let logDrainLimit = Duration.seconds(2)
    /// The longest wait for the end of its stderr however busy it stays, and the most bytes read from it meanwhile
    /// (a process it started that goes on writing to it).
    static let logDrainCap = Duration.seconds(15)
    static let logDrainBytes = 1 << 20

    final class Waiter: Sendable {
        let what: String
        let progress: (@Sendable (Int64) -> Void)?
        /// Takes a listed entry; an error it returns stops the listing (cancelled, failing with it).
        let entry: (@Sendable (RemoteListing.Entry) -> (any Error)?)?
        let complete: @Sendable (Result<JSONValue, any Error>) -> Void
        let idleLimit: Duration?
        /// When the request fails with ``PluginTimeout`` if still unanswered (nil: never), and that limit.
        let deadline: ContinuousClock.Instant?
        let deadlineLimit: Duration?
        /// Whether the request may ask for bandwidth (`want`: a put), and the pacing that grants it (nil: at once).
        let paces: Bool
        let pacing: SendPacing?

        init(what: String, idleLimit: Duration?, deadline: Duration? = nil, progress: (@Sendable (Int64) -> Void)?,
             entry: (@Sendable (RemoteListing.Entry) -> (any Error)?)?, paces: Bool = false, pacing: SendPacing? = nil,
             complete: @escaping @Sendable (Result<JSONValue, any Error>) -> Void) {
            self.what = what
            self.paces = paces
            self.pacing = pacing
            self.idleLimit = idleLimit
            self.deadline = deadline.map { .now + $0 }
            self.deadlineLimit = deadline
            self.progress = progress
            self.entry = entry
            self.complete = complete
        }
    }

    init(process: PluginProcess, label: String, logger: Logger, cancelGrace: Duration,
         onEnd: @escaping @Sendable (PluginSession, Bool) -> Void) {
        self.process = process
        outbox = PluginOutbox(process: process)
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
        timer.withLock { timer in
            let source = DispatchSource.makeTimerSource(queue: DispatchQueue.global())
            source.setEventHandler { [weak self] in self?.sweep() }
            source.schedule(deadline: .now() + .milliseconds(50), repeating: .milliseconds(50), leeway: .milliseconds(20))
            source.resume()
            timer = source
        }
    }

    var isEnded: Bool { state.withLock { $0.ended != nil } }

    /// Requests cancelled that the plugin has not ended yet.
    var cancelledInFlight: Int { state.withLock { $0.cancelled.count } }

    /// Why the session ended, when it was not closed by syncgate (nil while it runs, and after a close).
    var unexpectedEnd: String? { state.withLock { $0.closing ? nil : $0.ended?.message } }

    /// The last line the plugin wrote to its log, for messages ("" when none).
    var lastLog: String { state.withLock { $0.lastLogLine } }

    // MARK: Requests

    /// Sends a request and waits for its final answer (`ok`'s value; an `error` throws ``PluginErrorBody``). The
    /// task's cancellation sends `cancel` and returns at once with `CancellationError`; the plugin must end the
    /// request within the cancel grace or it is taken for hung and killed. `idleLimit`: the most the plugin may stay
    /// silent about the request. `paces`: the request may ask for bandwidth (`want`), granted by `pacing` (at once
    /// when nil).
    func request(
        _ op: String, _ fields: [String: JSONValue], what: String, idleLimit: Duration? = nil, deadline: Duration? = nil,
        progress: (@Sendable (Int64) -> Void)? = nil, entry: (@Sendable (RemoteListing.Entry) -> (any Error)?)? = nil,
        paces: Bool = false, pacing: SendPacing? = nil
    ) async throws -> JSONValue {
        let box = CancelBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<JSONValue, any Error>) in
                let once = Once(continuation)
                let waiter = Waiter(what: what, idleLimit: idleLimit, deadline: deadline, progress: progress, entry: entry,
                                    paces: paces, pacing: pacing) { once.resume($0) }
                send(op, fields, waiter: waiter, box: box)
            }
        } onCancel: {
            if let id = box.cancel() { self.cancel(id) }
        }
    }

    /// ``request(_:_:what:idleLimit:progress:entry:)`` for a thread that may block (starting a plugin): waits at
    /// most `timeout`, then takes the plugin for hung.
    func requestBlocking(_ op: String, _ fields: [String: JSONValue], what: String, timeout: Duration) throws -> JSONValue {
        let answered = Latch()
        let result = ResultBox()
        let waiter = Waiter(what: what, idleLimit: nil, progress: nil, entry: nil) { outcome in
            result.set(outcome)
            answered.open()
        }
        send(op, fields, waiter: waiter, box: CancelBox())
        if !answered.wait(timeout: timeout) {
            end(PluginGone(message: "\(label) did not answer \(what) within \(timeout.syncgateText); killed it"), kill: true)
            answered.wait()
        }
        return try result.get()
    }

    private func send(_ op: String, _ fields: [String: JSONValue], waiter: Waiter, box: CancelBox) {
        let started: Result<Int, PluginGone> = state.withLock { state in
            if let ended = state.ended { return .failure(ended) }
            state.nextID += 1
            let id = state.nextID
            state.inFlight[id] = InFlight(waiter: waiter, lastHeard: waiter.idleLimit == nil ? nil : .now)
            return .success(id)
        }
        let id: Int
        switch started {
        case .failure(let ended):
            waiter.complete(.failure(ended))
            return
        case .success(let value):
            id = value
        }
        if box.register(id) {
            // Cancelled before it was sent: it never reaches the plugin.
            let waiter = state.withLock { $0.inFlight.removeValue(forKey: id)?.waiter }
            waiter?.complete(.failure(CancellationError()))
            return
        }
        var message = fields
        message["id"] = .int(id)
        message["op"] = .string(op)
        do {
            try outbox.post(JSONText.compact(.object(sorting: message), sortedKeys: true))
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
    func cancel(_ id: Int, with error: any Error = CancellationError()) {
        let taken: InFlight? = state.withLock { state in
            guard let request = state.inFlight.removeValue(forKey: id) else { return nil }
            if state.ended == nil { state.cancelled.insert(id) }
            return request
        }
        guard let taken else { return }
        taken.pacingTask?.cancel()
        let waiter = taken.waiter
        waiter.complete(.failure(error))
        try? outbox.post(JSONText.compact(["op": "cancel", "id": .int(id)], sortedKeys: true), patience: .seconds(1))
        let grace = cancelGrace
        DispatchQueue.global().asyncAfter(deadline: .now() + grace.seconds) { [self] in
            let stillRunning = state.withLock { $0.cancelled.contains(id) }
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
        let (expired, silent) = state.withLock { state -> ([(Int, Waiter)], Waiter?) in
            var expired: [(Int, Waiter)] = []
            var silent: Waiter?
            for (id, request) in state.inFlight {
                let waiter = request.waiter
                if let deadline = waiter.deadline, deadline + request.paced <= now {
                    expired.append((id, waiter))
                } else if let heard = request.lastHeard, let limit = waiter.idleLimit, now - heard >= limit {
                    silent = waiter
                }
            }
            return (expired, silent)
        }
        for (id, waiter) in expired {
            cancel(id, with: PluginTimeout(message: "\(label) did not answer \(waiter.what) within \((waiter.deadlineLimit ?? .zero).syncgateText)"))
        }
        if let silent, let limit = silent.idleLimit {
            end(PluginGone(message: "\(label) did not answer \(silent.what) within \(limit.syncgateText) (hung?); killed it"), kill: true)
        }
    }

    /// A paced request asked to send `bytes` more: grants them once its pacing lets them go (at once without
    /// one), moving its deadline on by the wait. Called by the reader thread; the wait is a task of its own.
    func want(_ id: Int, _ bytes: Int64, waiter: Waiter) {
        let again = state.withLock { state -> Bool in
            guard state.inFlight[id]?.wanting == false else { return state.inFlight[id] != nil }
            state.inFlight[id]?.wanting = true
            return false
        }
        if again {
            // Each want that waits is a task: one at a time per put bounds them by the concurrency.
            end(PluginGone(message: "\(label) broke the protocol: it asked again (want) for \(waiter.what) before its last want was granted; killed it"), kill: true)
            return
        }
        guard let pacing = waiter.pacing else {
            grant(id, bytes, waited: .zero)
            return
        }
        let asked = ContinuousClock.now
        let task = Task { [self] in
            // A wait cancelled (the request cancelled, the session ended) grants nothing: grant() finds it gone.
            try? await pacing.pace(Int(bytes))
            grant(id, bytes, waited: ContinuousClock.now - asked)
        }
        let kept = state.withLock { state -> Bool in
            guard state.inFlight[id] != nil else { return false }
            state.inFlight[id]?.pacingTask = task
            return true
        }
        if !kept { task.cancel() }
    }

    /// Sends `grant` for a request still in flight (a cancelled or ended one gets none).
    private func grant(_ id: Int, _ bytes: Int64, waited: Duration) {
        let live = state.withLock { state -> Bool in
            guard state.ended == nil, state.inFlight[id] != nil else { return false }
            state.inFlight[id]?.paced += waited
            state.inFlight[id]?.wanting = false
            if state.inFlight[id]?.lastHeard != nil { state.inFlight[id]?.lastHeard = .now }
            return true
        }
        guard live else { return }
        do {
            try outbox.post(JSONText.compact(["op": "grant", "id": .int(id), "bytes": .int(bytes)], sortedKeys: true))
        } catch {
            if case .notReading(let seconds) = error {
                end(PluginGone(message: "\(label) has not read its input for \(seconds) s; killed it"), kill: true)
            }
        }
    }

    // MARK: Ending

    /// Ends the session: every request in flight fails with `reason`; `kill` also kills the plugin.
    func end(_ reason: PluginGone, kill: Bool) {
        let taken: (waiters: [Waiter], pacing: [Task<Void, Never>], expected: Bool)? = state.withLock { state in
            guard state.ended == nil else { return nil }
            state.ended = reason
            let waiters = state.inFlight.values.map(\.waiter)
            let pacing = state.inFlight.values.compactMap(\.pacingTask)
            state.inFlight.removeAll()
            state.cancelled.removeAll()
            return (waiters, pacing, state.closing)
        }
        guard let taken else { return }
        for task in taken.pacing { task.cancel() }
        timer.withLock { $0?.cancel() }
        if kill { process.kill() }
        if !taken.expected { logger.error("\(reason.message)") }
        for waiter in taken.waiters { waiter.complete(.failure(reason)) }
        exited.open()
        ended.open()
        onEnd(self, taken.expected)
    }

    /// Closes the plugin's stdin: it is expected to exit (its exit is then not an error).
    func closeInput() {
        state.withLock { $0.closing = true }
        process.closeInput()
    }

    /// Closes the plugin's stdin and waits up to `grace` for it to exit, then kills it; then waits for its log to be
    /// read to its end (``waitForLog()``) and for the session to end. For a thread that may block.
    func close(grace: Duration) {
        closeInput()
        if !exited.wait(timeout: grace) {
            end(PluginGone(message: "\(label) was stopped"), kill: true)
        }
        waitForLog()
        // The reader thread ends the session as soon as the log is read (or given up on): at once.
        ended.wait(timeout: .seconds(1))
    }

    /// Waits until the plugin's stderr has been read to its end and its last lines are in the log. For a thread that
    /// may block, once the plugin has exited or was killed: what it wrote before it went is then in the pipe or in
    /// the forwarder's hands, and its end follows unless a process it started still holds the pipe. So the wait
    /// is not a fixed time but goes on while the pipe holds bytes not read yet (or its end, not yet seen: the
    /// forwarder is behind, on a busy machine), and gives up only once the pipe has stayed empty and open for
    /// ``logDrainLimit`` (a process the plugin started keeps it, silent), after ``logDrainCap`` in all, or once
    /// ``logDrainBytes`` more were read (such a process floods it). The first wait to give up says so, once; a
    /// later one (closing the session, stopping the host) then returns at once: what holds the pipe still does.
    func waitForLog() {
        if state.withLock({ $0.logAbandoned }) { return }
        let started = ContinuousClock.now
        let bytesBefore = state.withLock { $0.logBytes }
        var quietSince = started
        while !logRead.wait(timeout: .milliseconds(50)) {
            let now = ContinuousClock.now
            if process.stderrHasUnread { quietSince = now }
            let read = state.withLock { $0.logBytes } - bytesBefore
            let quiet = now - quietSince >= PluginSession.logDrainLimit
            guard quiet || now - started >= PluginSession.logDrainCap || read > PluginSession.logDrainBytes else { continue }
            let first = state.withLock { state in
                defer { state.logAbandoned = true }
                return !state.logAbandoned
            }
            guard first else { return }
            if quiet {
                logger.warning("\(label): its stderr is still open \(PluginSession.logDrainLimit.syncgateText) after it ended (a process it started keeps it?); its last log lines may be missing")
            } else {
                logger.warning("\(label): its stderr is still being written \((now - started).syncgateText) after it ended (\(ByteSize.format(Int64(read))) since; a process it started keeps it?); its last log lines may be missing")
            }
            return
        }
    }

    /// Whether the plugin's stderr has been read to its end.
    var logIsRead: Bool { logRead.opened }
}
