import Synchronization

/// Lets a request's cancellation handler learn its id, whichever of the two comes first.
final class CancelBox: Sendable {
    private let state = Mutex<(id: Int?, cancelled: Bool)>((nil, false))

    /// Records the request's id; true when it was cancelled already (the caller then cancels it).
    func register(_ id: Int) -> Bool {
        state.withLock { state in
            state.id = id
            return state.cancelled
        }
    }

    /// Marks it cancelled; returns the id when it is known.
    func cancel() -> Int? {
        state.withLock { state in
            state.cancelled = true
            return state.id
        }
    }
}
