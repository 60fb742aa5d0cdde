import Foundation
@testable import SyncgateCore
import SyncgateTestSupport
import Testing

/// The queue between the walk or the planning thread and its consumer: order, the bound, and each way it ends.
@Suite("bounded queue")
struct BoundedQueueTests {
    /// A value shared with the producer's thread.
    final class Shared<Value: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: Value
        init(_ value: Value) { stored = value }
        var value: Value {
            get { lock.withLock { stored } }
            set { lock.withLock { stored = newValue } }
        }
    }

    /// A producer on a thread of its own, as the walk and the planning have.
    static func produce(_ queue: BoundedQueue<Int>, _ values: Range<Int>, produced: Shared<Int>? = nil) -> Thread {
        let thread = Thread {
            defer { queue.finish() }
            for value in values {
                guard queue.put(value) else { return }
                produced?.value += 1
            }
        }
        thread.start()
        return thread
    }

    @Test func aThreadConsumerGetsEverythingInOrderThenNil() {
        let queue = BoundedQueue<Int>(capacity: 3)
        _ = Self.produce(queue, 0..<1000)
        var taken: [Int] = []
        while let value = queue.take() { taken.append(value) }
        #expect(taken == Array(0..<1000))
        #expect(queue.take() == nil)
    }

    @Test func aTaskConsumerGetsEverythingInOrderThenNil() async {
        let queue = BoundedQueue<Int>(capacity: 1)
        _ = Self.produce(queue, 0..<1000)
        var taken: [Int] = []
        while let value = await queue.next() { taken.append(value) }
        #expect(taken == Array(0..<1000))
    }

    @Test func theProducerWaitsWhileTheQueueIsFull() async throws {
        let queue = BoundedQueue<Int>(capacity: 2)
        let produced = Shared(0)
        _ = Self.produce(queue, 0..<10, produced: produced)
        #expect(await WatchRecorder.wait { produced.value == 2 })
        try await Task.sleep(for: .milliseconds(200))
        #expect(produced.value == 2, "the producer went past the bound")
        #expect(queue.take() == 0)
        #expect(await WatchRecorder.wait { produced.value == 3 })
    }

    @Test func aCancelledTaskConsumerGetsNilAndLosesNothing() async throws {
        let queue = BoundedQueue<Int>(capacity: 1)
        let waiting = Task { await queue.next() }
        try await Task.sleep(for: .milliseconds(100))  // let it wait on the empty queue
        waiting.cancel()
        #expect(await waiting.value == nil)
        // Cancelled before it asks: nil at once.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await queue.next()
        }
        #expect(await early.value == nil)
        // The queue still works for the next consumer call.
        #expect(queue.put(7))
        queue.finish()
        #expect(await queue.next() == 7)
        #expect(await queue.next() == nil)
    }

    @Test func stopReleasesAWaitingProducerAndKeepsWhatIsQueued() async {
        let queue = BoundedQueue<Int>(capacity: 1)
        #expect(queue.put(1))
        let result = Shared<Bool?>(nil)
        let producer = Thread {
            let went = queue.put(2)  // waits: the queue is full
            result.value = went
            queue.finish()
        }
        producer.start()
        queue.stop()
        #expect(await WatchRecorder.wait { result.value != nil })
        #expect(result.value == false)
        #expect(!queue.put(3, wait: false))
        #expect(queue.isStopped)
        #expect(queue.take() == 1)
        #expect(queue.take() == nil)
    }

    @Test func aConsumerThatLeftHasWhatIsPutDroppedWithoutHoldingTheProducer() {
        let queue = BoundedQueue<Int>(capacity: 1)
        #expect(queue.put(1))
        queue.leave()
        let produced = Shared(0)
        _ = Self.produce(queue, 0..<10_000, produced: produced)
        queue.waitUntilFinished()  // returns: the producer never waited for room
        #expect(produced.value == 10_000)
        #expect(queue.take() == nil)
    }
}
