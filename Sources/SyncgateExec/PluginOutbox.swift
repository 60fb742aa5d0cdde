import Foundation
import Synchronization

/// What syncgate writes to one plugin's stdin. Messages posted at about the same moment (the requests of tasks that
/// resumed together, a cancel, a grant) leave in one write: the first to post while no write is under way writes its
/// own and whatever the others post meanwhile, until nothing is left, so a busy plugin is woken once for several
/// requests and never waits for a timer. To a plugin that speaks batches (``useBatches()``) they go as one batch
/// line; to any other as a line each, as before (a plugin that reads lines sees no difference).
final class PluginOutbox: Sendable {
    private struct State {
        var queue: [String] = []
        var writing = false
        var batched = false
    }

    private let state = Mutex(State())
    let process: PluginProcess

    init(process: PluginProcess) {
        self.process = process
    }

    /// Whether lines may be batches (the plugin declared `batch` in its `hello` answer): then its own lines may be too.
    var batched: Bool { state.withLock { $0.batched } }

    /// Messages posted and not yet handed to a write (those held by ``hold()`` among them).
    var queued: Int { state.withLock { $0.queue.count } }

    func useBatches() {
        state.withLock { $0.batched = true }
    }

    /// Posts one message (a compact JSON object, no newline). Returns once it is written, or handed to the write
    /// under way. A write that fails throws to the poster that made it (the others' messages go with the plugin).
    func post(_ message: String, patience: Duration = .seconds(5)) throws(PluginProcess.WriteFailure) {
        let first: (messages: [String], batched: Bool)? = state.withLock { state in
            state.queue.append(message)
            guard !state.writing else { return nil }
            state.writing = true
            return (Self.take(&state.queue), state.batched)
        }
        try drain(first, patience: patience)
    }

    /// Holds what is posted from now on until ``release()``, as if a write were under way: `plugin check` and the
    /// tests send requests known to go out together, in one batch. Waits for a write under way to end first.
    func hold() {
        while true {
            let held = state.withLock { state in
                guard !state.writing else { return false }
                state.writing = true
                return true
            }
            if held { return }
            Thread.sleep(forTimeInterval: 0.001)
        }
    }

    /// Writes what was posted since ``hold()`` (one batch to a plugin that speaks them), then goes on as before.
    func release() throws(PluginProcess.WriteFailure) {
        let first: (messages: [String], batched: Bool)? = state.withLock { state in
            guard !state.queue.isEmpty else {
                state.writing = false
                return nil
            }
            return (Self.take(&state.queue), state.batched)
        }
        try drain(first, patience: .seconds(5))
    }

    /// Writes `first`, then whatever was posted meanwhile, until nothing is left (this caller holds `writing`).
    private func drain(_ first: (messages: [String], batched: Bool)?, patience: Duration) throws(PluginProcess.WriteFailure) {
        var next = first
        while let batch = next {
            do {
                try process.write(PluginFraming.bytes(batch.messages, batched: batch.batched), patience: patience)
            } catch {
                state.withLock { state in
                    state.queue.removeAll()
                    state.writing = false
                }
                throw error
            }
            next = state.withLock { state in
                guard !state.queue.isEmpty else {
                    state.writing = false
                    return nil
                }
                return (Self.take(&state.queue), state.batched)
            }
        }
    }

    private static func take(_ queue: inout [String]) -> [String] {
        var taken: [String] = []
        swap(&taken, &queue)
        return taken
    }
}
