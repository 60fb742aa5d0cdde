import Foundation
import SyncgateTestSupport
import Testing

/// Whether the simulator-backed tests can run, and why not.
enum HeadUnitTestEnvironment {
    static var simulatorReady: Bool { HeadUnitSimulatorProcess.isAvailable || TestPaths.serversRequired }
    static let simulatorReason: Comment = "needs the syncgate-headunit-sim executable (swift build)"

    /// Starts the simulator for a test; always stopped afterwards.
    static func withSimulator<T>(
        _ arguments: [String] = [], prepare: (TemporaryDirectory) throws -> Void = { _ in },
        _ body: (HeadUnitSimulatorProcess) async throws -> T
    ) async throws -> T {
        let simulator = try await HeadUnitSimulatorProcess(arguments, prepare: prepare)
        do {
            let result = try await body(simulator)
            if ProcessInfo.processInfo.environment["HEADUNIT_SIM_LOG"] != nil { print(simulator.log) }
            simulator.cleanUp()
            return result
        } catch {
            print("simulator log:\n\(simulator.log.suffix(4000))")
            simulator.cleanUp()
            throw error
        }
    }
}
