import Foundation
import NIOCore

/// The live head-unit sessions, so the control port can change the HMI level of all of them or drop them.
final class SessionRegistry: @unchecked Sendable {
    private let lock = NSLock()
    private var sessions: [ObjectIdentifier: NIOLoopBound<SimulatorSession>] = [:]

    func add(_ session: NIOLoopBound<SimulatorSession>, id: ObjectIdentifier) { lock.withLock { sessions[id] = session } }
    func remove(_ id: ObjectIdentifier) { _ = lock.withLock { sessions.removeValue(forKey: id) } }

    /// Runs `body` on each session's event loop.
    func forEach(_ body: @escaping @Sendable (SimulatorSession) -> Void) {
        let all = lock.withLock { Array(sessions.values) }
        for bound in all {
            bound.eventLoop.execute { body(bound.value) }
        }
    }
}
