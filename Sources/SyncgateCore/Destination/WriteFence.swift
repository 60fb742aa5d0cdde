import Synchronization

/// The check a destination makes right before each request that writes to it (see
/// ``Destination/useWriteFence(_:)``): set once per run by the engine, asked by the destination's send path.
public final class WriteFence: Sendable {
    /// The check, in a struct: a bare closure in a `Mutex` is re-wrapped in two reabstraction thunks each time
    /// `withLock` lends it out (the `inout` generic value is converted to the closure's own form and written back),
    /// so that every ``verify()`` made the next call deeper: 20,000 puts nested 40,000 thunks and spent most of the
    /// run's CPU calling through them. A struct holding the closure is lent out as it is.
    private struct Check: Sendable {
        let refusal: @Sendable () -> (any Error)?
    }

    private let check = Mutex<Check?>(nil)

    public init() {}

    /// The check to make from now on.
    public func use(_ refusal: @escaping @Sendable () -> (any Error)?) {
        check.withLock { $0 = Check(refusal: refusal) }
    }

    /// Throws the refusal when the write must not go out.
    public func verify() throws {
        guard let check = check.withLock({ $0 }) else { return }
        if let error = check.refusal() { throw error }
    }
}
