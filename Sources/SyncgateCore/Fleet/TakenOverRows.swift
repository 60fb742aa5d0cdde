import Synchronization

/// The rows whose claims ``Ledger/resetInterrupted(at:)`` took back from instances that are gone (their lease ended)
/// while the rows were still to be sent. Such an instance may have sent the file before it could record so: where a
/// resend is harmless (S3), attempt starts are written in batches, so a killed instance's last uploads can be at the
/// destination with their rows still `pending` and no attempt counted. The next run asks the destination first for
/// these (``take(_:destination:)``, once per row). At most the rows the gone instances held: their waves in flight.
final class TakenOverRows: Sendable {
    private struct Key: Hashable {
        var file: FileKey
        var destination: String
    }

    private let keys = Mutex(Set<Key>())

    func add(_ file: FileKey, destination: String) {
        keys.withLock { _ = $0.insert(Key(file: file, destination: destination)) }
    }

    /// Whether `file` at `destination` was taken over and not asked about yet (forgotten once asked).
    func take(_ file: FileKey, destination: String) -> Bool {
        keys.withLock { $0.remove(Key(file: file, destination: destination)) != nil }
    }
}
