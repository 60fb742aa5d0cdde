import Foundation
import NIOCore
import Synchronization

/// The live head-unit sessions, so the control port can change the HMI level of all of them or drop them.
final class SessionRegistry: Sendable {
    private let sessions = Mutex<[ObjectIdentifier: NIOLoopBound<SimulatorSession>]>([:])

    func add(_ session: NIOLoopBound<SimulatorSession>, id: ObjectIdentifier) { sessions.withLock { $0[id] = session } }
    func remove(_ id: ObjectIdentifier) { _ = sessions.withLock { $0.removeValue(forKey: id) } }

    /// Runs `body` on each session's event loop.
    func forEach(_ body: @escaping @Sendable (SimulatorSession) -> Void) {
        let all = sessions.withLock { Array($0.values) }
        for bound in all {
            bound.eventLoop.execute { body(bound.value) }
        }
    }
}
