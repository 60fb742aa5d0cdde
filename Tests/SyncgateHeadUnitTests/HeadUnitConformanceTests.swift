import DestinationConformance
import Foundation
import SyncgateCore
import SyncgateHeadUnit
import SyncgateTestSupport
import Testing

/// The destination conformance suite (Tests/DestinationConformance) against the head-unit simulator. A head unit
/// flattens folders into one name, so the awkward paths are file names there; its credentials are its app's
/// registration, refused by the simulator with DISALLOWED.
@Suite(
    "head-unit destination conformance", .serialized,
    .enabled(if: HeadUnitTestEnvironment.simulatorReady, HeadUnitTestEnvironment.simulatorReason))
struct HeadUnitConformanceTests {
    @Test func conforms() async throws {
        try await HeadUnitTestEnvironment.withSimulator { sim in
            try await HeadUnitTestEnvironment.withSimulator(["--refuse-registration", "DISALLOWED"]) { refusing in
                let unreachable = Loopback.freePort()
                let harness = DestinationConformance.Harness(
                    name: "headunit",
                    working: { HeadUnitFixtures.destination(sim) },
                    unreachable: { HeadUnitFixtures.destination(port: unreachable, connectTimeout: .seconds(2), responseTimeout: .seconds(2)) },
                    refused: { HeadUnitFixtures.destination(refusing) },
                    readBack: { name in sim.storage.exists(name) ? try sim.storage.read(name) : nil })
                let problems = await DestinationConformance.run(harness)
                #expect(problems.isEmpty, "\(problems)")
            }
        }
    }
}
