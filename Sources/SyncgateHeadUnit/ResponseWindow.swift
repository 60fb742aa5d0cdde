import NIOCore
import Synchronization
import SyncgateSDL

/// The answers to one file's PutFiles in flight, numbered in the order the requests were sent. Each answer is put
/// here by the event loop as it completes the request's future (parsed there, see ``SDLResponse``), and the sender
/// is woken only when what it waits for is here: the answer it named, or any failure. One wake-up per batch of
/// answers, instead of one per answer with a hop to the event loop for each wait.
final class ResponseWindow: Sendable {
    private struct State {
        var results: [Int: Result<SDLResponse, any Error>] = [:]
        /// Sequence numbers of failed results (an error, or an answer that is not a success).
        var failures: Set<Int> = []
        var waiter: (target: Int, continuation: CheckedContinuation<Void, any Error>)?

        func ready(_ target: Int) -> Bool { results[target] != nil || !failures.isEmpty }
    }

    private let state = Mutex(State())

    /// The answer to request `sequence` (or its failure: a timeout, the link lost). Called on the event loop.
    func complete(_ sequence: Int, _ result: Result<RPCMessage, any Error>) {
        let parsed: Result<SDLResponse, any Error> = result.flatMap { message in Result { try SDLResponse(message) } }
        let failed: Bool
        switch parsed {
        case .success(let response): failed = !response.code.isSuccess
        case .failure: failed = true
        }
        let woken = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            state.results[sequence] = parsed
            if failed { state.failures.insert(sequence) }
            guard let waiter = state.waiter, state.ready(waiter.target) else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        woken?.resume()
    }

    /// Waits until the answer to `target` is here, or any request failed. Ends at once, with `CancellationError`,
    /// when the calling task is cancelled (a request's own time limit fails it: that ends the wait too).
    func wait(for target: Int) async throws {
        if state.withLock({ $0.ready(target) }) { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if state.ready(target) { return .success(()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiter = (target, continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                defer { state.waiter = nil }
                return state.waiter?.continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Takes the answer to `sequence` when it is here.
    func take(_ sequence: Int) -> Result<SDLResponse, any Error>? {
        state.withLock { state in
            state.failures.remove(sequence)
            return state.results.removeValue(forKey: sequence)
        }
    }

    /// The earliest failed request, when one failed.
    var firstFailure: Int? { state.withLock { $0.failures.min() } }
}
