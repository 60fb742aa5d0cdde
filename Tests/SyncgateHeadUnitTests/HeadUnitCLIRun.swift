import Foundation
import SyncgateTestSupport

/// A project folder with a config for one `headunit` destination pointing at a simulator (or any peer on a
/// loopback port), and helpers that run the real `syncgate` binary against it.
struct HeadUnitCLIRun {
    let folder: TemporaryDirectory
    let port: Int
    var config: URL { folder.file("plugins.yaml") }

    /// `routes`: the `routes:` list's items (default: every file to the car).
    init(sim: HeadUnitSimulatorProcess, responseTimeout: String = "5s", retries: Int = 2, extra: String = "",
         routes: String = HeadUnitCLIRun.everyFileToTheCar) throws {
        try self.init(port: sim.port, responseTimeout: responseTimeout, retries: retries, extra: extra, routes: routes)
    }

    static let everyFileToTheCar = """
          - match: ["**/*"]
            to: [car]
        """

    init(port: Int, responseTimeout: String = "5s", retries: Int = 2, extra: String = "", routes: String = HeadUnitCLIRun.everyFileToTheCar) throws {
        self.port = port
        folder = try TemporaryDirectory("headunit-cli")
        try FileManager.default.createDirectory(at: folder.file("src"), withIntermediateDirectories: true)
        try folder.write(
            "plugins.yaml",
            """
            version: 1
            state: state/state.sqlite
            sources:
              - name: src
                path: src
            destinations:
              - name: car
                type: headunit
                host: 127.0.0.1
                port: \(port)
                app: { name: "Build Tracker", id: "584421907" }
                connect_timeout: 2s
                response_timeout: \(responseTimeout)
                retry: { file: \(retries), artwork: \(retries), base_delay: 100ms, max_delay: 500ms }
            \(extra)
            routes:
            \(routes)

            """)
    }

    func source(_ relative: String, _ data: Data) throws { try folder.write("src/" + relative, data) }

    func run(_ arguments: [String], timeout: TimeInterval = 60) async throws -> ProcessResult {
        try await ProcessRunner.run(
            TestPaths.executable("syncgate"), arguments + ["--config", config.path], currentDirectory: folder.url,
            timeout: timeout)
    }

    /// `syncgate sync --json`: the exit status and the JSON events.
    func sync(_ extra: [String] = []) async throws -> (status: Int32, events: [[String: Any]], result: ProcessResult) {
        let result = try await run(["sync", "--json"] + extra)
        let events = result.stdout.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
        return (result.status, events, result)
    }

    /// `syncgate status --json`: the per-file rows.
    func statusFiles() async throws -> [[String: Any]] {
        let result = try await run(["status", "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        return object?["files"] as? [[String: Any]] ?? []
    }

    /// `status --json`'s destinations (state, why, how many files wait).
    func statusDestinations() async throws -> [[String: Any]] {
        let result = try await run(["status", "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        return object?["destinations"] as? [[String: Any]] ?? []
    }

    func remove() { folder.remove() }
}
