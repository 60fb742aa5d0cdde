import Logging
import Synchronization

/// What a plugin did against the protocol without breaking a request (its progress went back): syncgate goes on
/// (the progress it shows never goes back), says each kind of lapse once in its log, and `plugin check` reads them
/// all as violations.
final class ProtocolNotes: Sendable {
    private let state = Mutex<(all: [String], said: Bool)>(([], false))
    let logger: Logger
    let destination: String

    init(logger: Logger, destination: String) {
        self.logger = logger
        self.destination = destination
    }

    func add(_ note: String) {
        let first = state.withLock { state -> Bool in
            if state.all.count < 100 { state.all.append(note) }
            defer { state.said = true }
            return !state.said
        }
        if first { logger.warning("\(destination): \(note) (said once)") }
    }

    /// The notes taken since the last call.
    func take() -> [String] {
        state.withLock { state in
            defer { state.all = [] }
            return state.all
        }
    }
}
