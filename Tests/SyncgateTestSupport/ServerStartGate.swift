import Foundation

/// Bounds how many test servers start at the same moment. Swift Testing runs every test at once; without this
/// bound, a few dozen Python servers importing moto or cryptography together on a small CI machine take longer
/// than any start-up deadline. Only the start-up is bounded (a slot is released once the server listens), so a
/// test that starts several servers cannot deadlock against another.
public final class ServerStartGate: @unchecked Sendable {
    public static let shared = ServerStartGate(slots: max(2, ProcessInfo.processInfo.activeProcessorCount))

    private let lock = NSLock()
    private var available: Int
    private var waiters: [CheckedContinuation<Void, Never>] = []

    init(slots: Int) { available = slots }

    /// Waits for a free slot. Pair with ``leave()`` (in a `defer`).
    public func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            if available > 0 {
                available -= 1
                lock.unlock()
                continuation.resume()
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }

    /// Frees the slot taken by ``enter()``: the longest waiter gets it.
    public func leave() {
        lock.lock()
        if waiters.isEmpty {
            available += 1
            lock.unlock()
        } else {
            let next = waiters.removeFirst()
            lock.unlock()
            next.resume()
        }
    }
}
