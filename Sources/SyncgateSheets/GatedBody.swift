import NIOCore
import Synchronization

/// A request body whose bytes are handed over only once `check` passes, asked at the last moment syncgate has:
/// when the HTTP client, its connection made and the request's head written, asks for the body. A write a fenced
/// instance decided on before it was frozen (SIGSTOP) and that was still waiting for a token, a connection or a
/// thread when it woke thus does not go out: the check fails, the client ends the request with its body unsent,
/// and the server applies nothing. ``refusal`` keeps what the check threw, so the caller can report it instead of
/// the client's error.
final class GatedBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    let bytes: ByteBuffer
    let check: @Sendable () throws -> Void
    private let refused = Mutex<(any Error)?>(nil)

    init(bytes: ByteBuffer, check: @escaping @Sendable () throws -> Void) {
        self.bytes = bytes
        self.check = check
    }

    /// What the check threw, when it refused.
    var refusal: (any Error)? { refused.withLock { $0 } }

    struct AsyncIterator: AsyncIteratorProtocol {
        let body: GatedBody
        var done = false

        mutating func next() async throws -> ByteBuffer? {
            guard !done else { return nil }
            done = true
            do {
                try body.check()
            } catch {
                body.refuse(error)
                throw error
            }
            return body.bytes
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self) }

    private func refuse(_ error: any Error) { refused.withLock { $0 = error } }
}
