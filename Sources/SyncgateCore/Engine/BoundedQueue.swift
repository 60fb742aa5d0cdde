import Foundation

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
final class BoundedQueue<Element: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var elements: [Element] = []
    private var head = 0
    private var finished = false
    private var stopped = false
    private var left = false
    /// The consumer waiting in ``next()`` for an element, the queue being empty.
    private var waitingConsumer: CheckedContinuation<Element?, Never>?
    let capacity: Int

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    private var count: Int { elements.count - head }

    /// Adds an element, waiting (unless `wait` is false) while `capacity` elements are queued. Returns false once
    /// the queue was stopped (the element is not queued); an element for a consumer that left is dropped (true).
    @discardableResult
    func put(_ element: Element, wait: Bool = true) -> Bool {
        condition.lock()
        while wait && count >= capacity && !stopped && !left { condition.wait() }
        if stopped {
            condition.unlock()
            return false
        }
        if left {
            condition.unlock()
            return true
        }
        if let consumer = waitingConsumer {
            // The queue is empty (the consumer waits): the element goes straight to it.
            waitingConsumer = nil
            condition.unlock()
            consumer.resume(returning: element)
            return true
        }
        elements.append(element)
        condition.broadcast()
        condition.unlock()
        return true
    }

    /// The next element, blocking this thread; nil once the queue is finished and empty.
    func take() -> Element? {
        condition.withLock {
            while count == 0 && !finished { condition.wait() }
            return popLocked()
        }
    }

    /// The next element, waiting without holding a thread; nil once the queue is finished and empty, or when the
    /// calling task is cancelled (no element is lost then: it stays queued).
    func next() async -> Element? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
                condition.lock()
                if count > 0 || finished || Task.isCancelled {
                    let element = Task.isCancelled ? nil : popLocked()
                    condition.unlock()
                    continuation.resume(returning: element)
                    return
                }
                precondition(waitingConsumer == nil, "BoundedQueue has one consumer")
                waitingConsumer = continuation
                condition.unlock()
            }
        } onCancel: {
            condition.lock()
            let consumer = waitingConsumer
            waitingConsumer = nil
            condition.unlock()
            consumer?.resume(returning: nil)
        }
    }

    /// Takes the first element (nil when none); the caller holds the lock.
    private func popLocked() -> Element? {
        guard count > 0 else { return nil }
        let element = elements[head]
        head += 1
        if head >= 64 && head * 2 >= elements.count {
            elements.removeFirst(head)
            head = 0
        }
        condition.broadcast()  // a producer may wait for room
        return element
    }

    /// The producer is done: the consumer gets what is queued, then nil.
    func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        let consumer = waitingConsumer
        waitingConsumer = nil
        condition.unlock()
        consumer?.resume(returning: nil)
    }

    /// Asks the producer to stop: ``put(_:wait:)`` returns false from now on, also to a producer waiting for room.
    func stop() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    var isStopped: Bool { condition.withLock { stopped } }

    /// The consumer takes nothing more: what is queued is dropped, and so is what is put from now on.
    func leave() {
        condition.withLock {
            left = true
            elements.removeAll()
            head = 0
            condition.broadcast()
        }
    }

    /// Blocks this thread until the producer has called ``finish()``.
    func waitUntilFinished() {
        condition.withLock {
            while !finished { condition.wait() }
        }
    }
}
