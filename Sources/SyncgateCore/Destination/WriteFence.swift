import Synchronization

/// The check a destination makes right before each request that writes to it (see
/// ``Destination/useWriteFence(_:)``): set once per run by the engine, asked by the destination's send path.
public final class WriteFence: Sendable {
    private let refusal = Mutex<(@Sendable () -> (any Error)?)?>(nil)

    public init() {}

    /// The check to make from now on.
    public func use(_ check: @escaping @Sendable () -> (any Error)?) {
        refusal.withLock { $0 = check }
    }

    /// Throws the refusal when the write must not go out.
    public func verify() throws {
        guard let check = refusal.withLock({ $0 }) else { return }
        if let error = check() { throw error }
    }
}
