import SyncgateJSON
import Synchronization

/// The answer to a request made from a thread that waits for it (``PluginSession/requestBlocking``): the first
/// one set is kept.
final class ResultBox: Sendable {
    private let result = Mutex<Result<JSONValue, any Error>?>(nil)

    func set(_ value: Result<JSONValue, any Error>) {
        result.withLock { result in
            if result == nil { result = value }
        }
    }

    func get() throws -> JSONValue {
        try result.withLock { $0 ?? .failure(PluginGone(message: "no answer")) }.get()
    }
}
