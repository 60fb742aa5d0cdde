import Foundation
import SyncgateCore
import Synchronization

/// The gateway the status page looks at, across reloads: SIGHUP replaces the gateway, not the page's server. Until
/// the first gateway starts (and between two), the page says it is not ready.
final class CurrentGateway: GatewayObservable, Sendable {
    private let gateway = Mutex<Gateway?>(nil)
    private let idle = OperationList()

    func set(_ gateway: Gateway?) { self.gateway.withLock { $0 = gateway } }
    private var current: Gateway? { gateway.withLock { $0 } }

    struct NotRunning: Error, CustomStringConvertible {
        var description: String { "the gateway is starting or reading its config again" }
    }

    var isReady: Bool { current?.isReady ?? false }
    func statusReport() async throws -> StatusReport {
        guard let current else { throw NotRunning() }
        return try await current.statusReport()
    }
    var operations: OperationList { current?.operations ?? idle }
    func events() -> AsyncStream<DeliveryEvent> {
        guard let current else { return AsyncStream { $0.finish() } }
        return current.events()
    }
    func recorded() -> AsyncStream<Void> {
        guard let current else { return AsyncStream { $0.finish() } }
        return current.recorded()
    }
    func retry(destination: String?, paths: [String]) async throws -> Int {
        guard let current else { throw NotRunning() }
        return try await current.retry(destination: destination, paths: paths)
    }
    func forget(destination: String?, paths: [String]) async throws -> Int {
        guard let current else { throw NotRunning() }
        return try await current.forget(destination: destination, paths: paths)
    }
    var figures: GatewayFigures { current?.figures ?? GatewayFigures() }
}
