import SyncgateJSON
import Synchronization

/// Resumes a continuation once, whoever calls first.
final class Once: Sendable {
    private let continuation: Mutex<CheckedContinuation<JSONValue, any Error>?>

    init(_ continuation: CheckedContinuation<JSONValue, any Error>) { self.continuation = Mutex(continuation) }

    func resume(_ result: Result<JSONValue, any Error>) {
        let first = continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
        first?.resume(with: result)
    }
}
