import Foundation

/// Per destination, the last ``FleetView`` whose share an instance walked, behind a lock.
final class WalkedViews: @unchecked Sendable {
    private let lock = NSLock()
    private var views: [String: FleetView] = [:]
    var value: [String: FleetView] { lock.withLock { views } }
    func set(_ view: FleetView, for destination: String) { lock.withLock { views[destination] = view } }
}
