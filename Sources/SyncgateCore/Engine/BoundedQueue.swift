import Dispatch
import Synchronization

/// A first-in first-out queue of at most `capacity` elements between a producer on a thread of its own (the walk
/// of the sources, the planning) and one consumer, which takes elements either blocking a thread (``take()``) or
/// from a task (``next()``). The producer waits while the queue is full, so what is in memory stays bounded however
/// much is produced.
///
/// The ends:
/// - the producer calls ``finish()`` when done: the consumer gets what is queued, then nil;
/// - ``stop()`` asks the producer to stop: its next (or current, waiting) ``put(_:wait:)`` returns false; what is
///   queued stays for the consumer, which still ends at ``finish()``;
/// - the consumer calls ``leave()`` when it takes nothing more: what is queued is dropped, and so is everything put
///   from then on (the producer goes on for its other consumers).
///
/// The state is behind a `Mutex`. A thread that must wait (a producer for room, a consumer in ``take()`` or
/// ``waitUntilFinished()``) parks on a semaphore of its own, listed in the state; every change a waiter may be
/// waiting for wakes all parked threads, and each looks at the state again (as with a condition's broadcast). A
/// task in ``next()`` waits on a continuation instead, holding no thread.
final class BoundedQueue<Element: Sendable>: Sendable {
    private struct State {
        var elements: [Element] = []
        var head = 0
        var finished = false
        var stopped = false
        var left = false
        /// The consumer waiting in ``next()`` for an element, the queue being empty.
        var waitingConsumer: CheckedContinuation<Element?, Never>?
        /// Threads waiting for a change (see ``BoundedQueue/park(until:then:)``).
        var parked: [DispatchSemaphore] = []

        var count: Int { elements.count - head }

        /// Wakes every parked thread, to look at the state again. Signalling a semaphore calls nothing back.
        mutating func wakeParked() {
            guard !parked.isEmpty else { return }
            for semaphore in parked { semaphore.signal() }
            parked.removeAll()
        }

        /// Takes the first element (nil when none).
        mutating func pop() -> Element? {
            guard count > 0 else { return nil }
            let element = elements[head]
            head += 1
            if head >= 64 && head * 2 >= elements.count {
                elements.removeFirst(head)
                head = 0
            }
            wakeParked()  // a producer may wait for room
            return element
        }
    }

    private enum Step<Result: Sendable>: Sendable {
        case done(Result)
        case wait(DispatchSemaphore)
    }

    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Blocks this thread until `ready` holds, then runs `body`, under the lock.
    private func park<Result: Sendable>(until ready: (State) -> Bool, then body: (inout State) -> Result) -> Result {
        while true {
            let step: Step<Result> = state.withLock { state in
                if ready(state) { return .done(body(&state)) }
                let semaphore = DispatchSemaphore(value: 0)
                state.parked.append(semaphore)
                return .wait(semaphore)
            }
            switch step {
            case .done(let result): return result
            case .wait(let semaphore): semaphore.wait()
            }
        }
    }

    /// Adds an element, waiting (unless `wait` is false) while `capacity` elements are queued. Returns false once
    /// the queue was stopped (the element is not queued); an element for a consumer that left is dropped (true).
    @discardableResult
    func put(_ element: Element, wait: Bool = true) -> Bool {
        let capacity = capacity
        let (accepted, consumer): (Bool, CheckedContinuation<Element?, Never>?) = park(
            until: { !wait || $0.count < capacity || $0.stopped || $0.left }
        ) { state in
            if state.stopped { return (false, nil) }
            if state.left { return (true, nil) }
            if let consumer = state.waitingConsumer {
                // The queue is empty (the consumer waits): the element goes straight to it.
                state.waitingConsumer = nil
                return (true, consumer)
            }
            state.elements.append(element)
            state.wakeParked()
            return (true, nil)
        }
        consumer?.resume(returning: element)
        return accepted
    }

    /// The next element, blocking this thread; nil once the queue is finished and empty.
    func take() -> Element? {
        park(until: { $0.count > 0 || $0.finished }) { $0.pop() }
    }

    /// The next element, waiting without holding a thread; nil once the queue is finished and empty, or when the
    /// calling task is cancelled (no element is lost then: it stays queued).
    func next() async -> Element? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
                let now: Element?? = state.withLock { state in
                    if state.count > 0 || state.finished || Task.isCancelled {
                        return .some(Task.isCancelled ? nil : state.pop())
                    }
                    precondition(state.waitingConsumer == nil, "BoundedQueue has one consumer")
                    state.waitingConsumer = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let consumer = state.withLock { state in
                defer { state.waitingConsumer = nil }
                return state.waitingConsumer
            }
            consumer?.resume(returning: nil)
        }
    }

    /// The producer is done: the consumer gets what is queued, then nil.
    func finish() {
        let consumer = state.withLock { state in
            state.finished = true
            state.wakeParked()
            defer { state.waitingConsumer = nil }
            return state.waitingConsumer
        }
        consumer?.resume(returning: nil)
    }

    /// Asks the producer to stop: ``put(_:wait:)`` returns false from now on, also to a producer waiting for room.
    func stop() {
        state.withLock { state in
            state.stopped = true
            state.wakeParked()
        }
    }

    var isStopped: Bool { state.withLock { $0.stopped } }

    /// The consumer takes nothing more: what is queued is dropped, and so is what is put from now on.
    func leave() {
        state.withLock { state in
            state.left = true
            state.elements.removeAll()
            state.head = 0
            state.wakeParked()
        }
    }

    /// Blocks this thread until the producer has called ``finish()``.
    func waitUntilFinished() {
        park(until: { $0.finished }) { _ in () }
    }
}
