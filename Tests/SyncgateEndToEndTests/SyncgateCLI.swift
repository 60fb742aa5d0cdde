import Foundation
import SyncgateTestSupport

/// Runs the built `syncgate` binary in a folder with a config.
struct SyncgateCLI {
    let dir: TemporaryDirectory
    var environment: [String: String] = [:]

    static let binary = TestPaths.executable("syncgate")

    func run(_ arguments: [String], timeout: TimeInterval = 120, asUser user: String? = nil) async throws -> ProcessResult {
        if let user {
            let setpriv = URL(fileURLWithPath: "/usr/bin/setpriv")
            return try await ProcessRunner.run(setpriv, ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", SyncgateCLI.binary.path] + arguments,
                                         environment: environment, currentDirectory: dir.url, timeout: timeout)
        }
        return try await ProcessRunner.run(SyncgateCLI.binary, arguments, environment: environment, currentDirectory: dir.url, timeout: timeout)
    }

    func start(_ arguments: [String]) throws -> ChildProcess {
        try ProcessRunner.start(SyncgateCLI.binary, arguments, environment: environment, currentDirectory: dir.url)
    }

    /// Parses `--json` event lines.
    static func events(_ stdout: String) -> [[String: Any]] {
        stdout.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    static func json(_ text: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
    }
}
