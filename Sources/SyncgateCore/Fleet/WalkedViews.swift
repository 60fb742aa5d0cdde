import Synchronization

/// Per destination, the last ``FleetView`` whose share an instance walked, behind a lock.
final class WalkedViews: Sendable {
    private let views = Mutex<[String: FleetView]>([:])
    var value: [String: FleetView] { views.withLock { $0 } }
    func set(_ view: FleetView, for destination: String) { views.withLock { $0[destination] = view } }
}
