import DestinationConformance
import Foundation
import Logging
import SyncgateCore
import SyncgateExec
import SyncgateTestSupport
import Testing

/// The destination conformance suite (Tests/DestinationConformance) against `type: exec`, through the host syncgate
/// uses, with the reference plugins: the folder plugin (bash and jq), and the Python test plugin. A folder that
/// cannot be written is the plugin's "unreachable" destination (retryable, destination-scoped).
@Suite("exec destination conformance")
struct ExecConformanceTests {
    static func destination(_ program: String, path: String) -> any Destination {
        let spec = PluginSpec(
            executable: program, environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"],
            directory: NSTemporaryDirectory(), destination: "conformance", settings: ["path": .string(path)])
        return ExecDestination(spec: spec, logger: Logger(label: "conformance"))
    }

    func run(_ name: String, program: String, unreachable: Bool) async throws {
        let dir = try TemporaryDirectory("sg-exec-conformance")
        defer { dir.remove() }
        try dir.write("blocker", "a file where a folder should be")
        let root = dir.file("destination").path
        let blocked = dir.file("blocker/destination").path
        let harness = DestinationConformance.Harness(
            name: name,
            working: { Self.destination(program, path: root) },
            unreachable: unreachable ? { @Sendable in Self.destination(program, path: blocked) } : nil,
            readBack: { remote in FileManager.default.contents(atPath: root + "/" + remote) },
            findsExistingCopies: false)
        let problems = await DestinationConformance.run(harness)
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test(.enabled(if: ExecPluginTests.hasJQ, "needs jq"))
    func theFolderPluginConforms() async throws {
        try await run("exec folder plugin", program: ExecPluginTests.folderPlugin, unreachable: true)
    }

    @Test func thePythonTestPluginConforms() async throws {
        try await run("exec test plugin", program: ExecPluginTests.testPlugin, unreachable: false)
    }
}
