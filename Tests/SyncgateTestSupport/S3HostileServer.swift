import Foundation

/// The hostile S3 server of the tests (`Tests/S3HostileServer/s3_hostile_server.py`) on a free loopback port, in one
/// of its modes: corrupting storage with truthful ETags, endless or looping listings, huge answers, a stall, a fixed
/// error status, an error code echoing the request's session token, a TLS certificate no client trusts. It exits by itself after `maxSeconds`; always ``stop()`` it
/// (use `defer`).
public final class S3HostileServer: @unchecked Sendable {
    public enum Mode: String, Sendable {
        case corrupt, endlessList = "endless-list", repeatToken = "repeat-token", hugeError = "huge-error"
        case hugeAnswer = "huge-answer", stall, status, tls, echoToken = "echo-token"
    }

    public let port: Int
    public let mode: Mode
    private let directory: TemporaryDirectory
    private let logFile: URL
    private var process: ChildProcess?

    public static var script: URL { TestPaths.packageRoot.appendingPathComponent("Tests/S3HostileServer/s3_hostile_server.py") }

    /// `http://127.0.0.1:PORT` (`https://` in mode `.tls`).
    public var endpoint: String { "\(mode == .tls ? "https" : "http")://127.0.0.1:\(port)" }

    /// Starts the server. `status`, `code`, `retryAfter` and `bucketRegion` are for mode `.status` (`status` and `code`
    /// for `.echoToken` too); `bodyMiB` for the huge modes; `pageNames` (names per page) for `.endlessList`.
    public init(
        _ mode: Mode, status: Int = 503, code: String = "SlowDown", retryAfter: Int? = nil, bucketRegion: String? = nil,
        bodyMiB: Int = 256, pageNames: Int = 1000, maxSeconds: Int = 300
    ) async throws {
        guard let python = ProcessRunner.which("python3") else { throw S3TestServerError("python3 not found") }
        self.mode = mode
        port = Loopback.freePort()
        directory = try TemporaryDirectory("s3-hostile-\(mode.rawValue)")
        logFile = directory.file("server.log")
        var arguments = [
            "-u", S3HostileServer.script.path, "--port", String(port), "--mode", mode.rawValue, "--max-seconds", String(maxSeconds),
            "--status", String(status), "--code", code, "--body-mib", String(bodyMiB), "--page-names", String(pageNames),
        ]
        if let retryAfter { arguments += ["--retry-after", String(retryAfter)] }
        if let bucketRegion { arguments += ["--bucket-region", bucketRegion] }
        await ServerStartGate.shared.enter()
        defer { ServerStartGate.shared.leave() }
        let started = try ProcessRunner.start(python, arguments, logFile: logFile)
        process = started
        guard await Loopback.waitForListener(port: port, timeout: 60, while: { started.isRunning }) else {
            let log = self.log()
            stop()
            throw S3TestServerError("the hostile S3 server (\(mode.rawValue)) did not listen on 127.0.0.1:\(port): \(log.suffix(500))")
        }
    }

    deinit { stop() }

    /// What the server printed: one `METHOD PATH` line per request, and notes.
    public func log() -> String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// The request lines of the log with this method.
    public func requests(_ method: String) -> [String] {
        log().split(separator: "\n").map(String.init).filter { $0.hasPrefix(method + " /") }
    }

    /// Stops the server (SIGTERM, then SIGKILL after 5 s) and removes its folder. Idempotent.
    public func stop() {
        if let process {
            self.process = nil
            ProcessRunner.stop(process)
        }
        directory.remove()
    }
}
