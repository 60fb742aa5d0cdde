import Foundation

/// The fault-injecting TCP proxy (`Tests/FaultProxy/fault_proxy.py`) between syncgate and a loopback server.
/// Start it with ``start(target:)``, set faults with ``set(_:)``, and always ``stop()`` it.
public final class FaultProxy: @unchecked Sendable {
    public let port: Int
    public let controlPort: Int
    private let process: ChildProcess

    public static let script = TestPaths.packageRoot.appendingPathComponent("Tests/FaultProxy/fault_proxy.py")

    private init(port: Int, controlPort: Int, process: ChildProcess) {
        self.port = port
        self.controlPort = controlPort
        self.process = process
    }

    /// Starts a proxy in front of 127.0.0.1:targetPort.
    public static func start(targetPort: Int) async throws -> FaultProxy {
        guard let python = ProcessRunner.which("python3") else { throw ProxyError("python3 is not installed") }
        await ServerStartGate.shared.enter()
        defer { ServerStartGate.shared.leave() }
        let port = Loopback.freePort()
        var control = Loopback.freePort()
        while control == port { control = Loopback.freePort() }
        let process = try ProcessRunner.start(python, [script.path, "--listen", "\(port)", "--target", "127.0.0.1:\(targetPort)", "--control", "\(control)"])
        guard await Loopback.waitForListener(port: control, timeout: 20, while: { process.isRunning }) else {
            process.terminate()
            throw ProxyError("the fault proxy did not start")
        }
        return FaultProxy(port: port, controlPort: control, process: process)
    }

    public struct ProxyError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// A fault for the next `count` connections (nil: until changed). See the script for the modes.
    public func set(_ fault: [String: Any]) throws {
        _ = try request("POST", "/fault", body: try JSONSerialization.data(withJSONObject: fault))
    }

    /// Forward everything again.
    public func pass() throws { _ = try request("POST", "/pass", body: Data()) }

    /// The destination is down (connections refused) for the next `runs` runs; report each with ``runEnded()``.
    public func down(runs: Int) throws { try set(["mode": "down", "runs": runs]) }

    /// A run of syncgate ended (counts down ``down(runs:)``).
    public func runEnded() throws { _ = try request("POST", "/run-ended", body: Data()) }

    /// The next `answers` requests get a throttling server's answer (`flavor` "s3": 503 SlowDown; "sheets": 429
    /// RESOURCE_EXHAUSTED), with `retryAfter` seconds when given.
    public func throttle(answers: Int, flavor: String, retryAfter: Int? = nil) throws {
        var fault: [String: Any] = ["mode": "throttle", "count": answers, "flavor": flavor]
        if let retryAfter { fault["retry_after"] = retryAfter }
        try set(fault)
    }

    /// A flaky server: each HTTP request is answered, with probability `fraction` (0...1, drawn from a
    /// `random.Random(seed)` in the order requests arrive), with S3's 500 InternalError (or `status`, e.g. 503
    /// ServiceUnavailable) on a connection kept open; the others are forwarded. Takes effect at the next request, on
    /// connections opened while `flaky` is set too; ``pass()`` or another `flaky` changes it. The log counts each
    /// connection's requests "failed" and "forwarded".
    public func flaky(fraction: Double, seed: Int, status: Int? = nil) throws {
        var fault: [String: Any] = ["mode": "flaky", "fraction": fraction, "seed": seed, "flavor": "s3"]
        if let status { fault["status"] = status }
        try set(fault)
    }

    /// What happened to each connection so far.
    public func log() throws -> [[String: Any]] {
        let text = String(decoding: try request("GET", "/log", body: Data()), as: UTF8.self)
        return text.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    /// Stops the proxy: SIGTERM, then SIGKILL if it has not gone within 3 seconds.
    public func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date().addingTimeInterval(3)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    deinit { stop() }

    private func request(_ method: String, _ path: String, body: Data) throws -> Data {
        do {
            return try LoopbackHTTP.request(port: controlPort, method, path, body: body)
        } catch {
            throw ProxyError("the fault proxy's control port: \(error)")
        }
    }
}
