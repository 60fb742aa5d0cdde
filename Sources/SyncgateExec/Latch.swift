import Dispatch
import SyncgateCore
import Synchronization

/// A one-time signal that a thread of its own can block on, with or without a bound: once opened it stays open, and
/// every wait, past or future, returns. This is the plugin host's only blocking wait besides its pipe reads: it
/// serves code that runs on a raw thread (the pipe readers, the thread that starts a plugin or stops it, a
/// `Destination` property asked synchronously) and never a task of the cooperative pool, which awaits instead.
final class Latch: Sendable {
    private let isOpen = Mutex(false)
    /// Signalled once on opening; each waiter that gets it signals it again for the next one.
    private let semaphore = DispatchSemaphore(value: 0)

    /// Opens the latch (again: nothing happens).
    func open() {
        let first = isOpen.withLock { isOpen in
            defer { isOpen = true }
            return !isOpen
        }
        if first { semaphore.signal() }
    }

    var opened: Bool { isOpen.withLock { $0 } }

    /// Blocks until the latch is open.
    func wait() {
        semaphore.wait()
        semaphore.signal()
    }

    /// Blocks until the latch is open or `timeout` has passed; whether it is open.
    @discardableResult
    func wait(timeout: Duration) -> Bool {
        guard semaphore.wait(timeout: .now() + timeout.seconds) == .success else { return opened }
        semaphore.signal()
        return true
    }
}
