import Synchronization

/// Cancels the rest of a multi-file transfer: no new file or retry starts once cancelled; a backoff being waited
/// out ends at once; transfers in flight end (or are cancelled by the caller's task cancellation).
public final class CancellationHandle: Sendable {
    private struct State {
        var cancelled = false
        var handlers: [Int: @Sendable () -> Void] = [:]
        var nextHandler = 0
    }

    private let state = Mutex(State())

    public init() {}

    public func cancel() {
        let handlers: [@Sendable () -> Void] = state.withLock { state in
            guard !state.cancelled else { return [] }
            state.cancelled = true
            defer { state.handlers.removeAll() }
            return Array(state.handlers.values)
        }
        for handler in handlers { handler() }
    }

    public var isCancelled: Bool { state.withLock { $0.cancelled } }

    /// Runs `handler` once when cancelled (at once, returning nil, when cancelled already). Returns the handler's
    /// number for ``removeHandler(_:)``.
    @discardableResult
    public func onCancel(_ handler: @escaping @Sendable () -> Void) -> Int? {
        let number: Int? = state.withLock { state in
            guard !state.cancelled else { return nil }
            state.nextHandler += 1
            state.handlers[state.nextHandler] = handler
            return state.nextHandler
        }
        if number == nil { handler() }
        return number
    }

    /// Forgets a handler of ``onCancel(_:)`` (nil: none).
    public func removeHandler(_ number: Int?) {
        guard let number else { return }
        _ = state.withLock { $0.handlers.removeValue(forKey: number) }
    }
}
