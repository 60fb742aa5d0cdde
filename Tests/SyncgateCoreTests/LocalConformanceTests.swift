import DestinationConformance
import Foundation
import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport
import Testing

/// The destination conformance suite (Tests/DestinationConformance) against a folder. A folder has no network to be
/// unreachable; what it can refuse is its configuration: a `path` under a file blocks it.
@Suite("local destination conformance")
struct LocalConformanceTests {
    @Test func conforms() async throws {
        let dir = try TemporaryDirectory("sg-local-conformance")
        defer { dir.remove() }
        try dir.write("blocker", "a file where a folder should be")
        let root = dir.file("destination").path
        let harness = DestinationConformance.Harness(
            name: "local",
            working: { LocalDestination(root: root, fsync: .batch) },
            unreachable: nil,
            refused: { LocalDestination(root: dir.file("blocker/destination").path, fsync: .batch) },
            readBack: { name in FileManager.default.contents(atPath: root + "/" + name) },
            findsExistingCopies: false)
        let problems = await DestinationConformance.run(harness)
        #expect(problems.isEmpty, "\(problems)")
    }
}
