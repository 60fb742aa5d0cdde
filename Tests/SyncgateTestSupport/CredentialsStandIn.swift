import Foundation

/// The AWS credential endpoints of a machine, on loopback (`Tests/CredentialsStandIn/credentials_server.py`,
/// written from AWS's documentation): EC2 instance metadata with IMDSv2 tokens, and the container credentials
/// endpoint. The test says which credentials it hands out (``serve(_:)``) and reads how often it was asked
/// (``counts()``). Always ``stop()`` it.
public final class CredentialsStandIn: @unchecked Sendable {
    public let port: Int
    private let process: ChildProcess

    public static let script = TestPaths.packageRoot.appendingPathComponent("Tests/CredentialsStandIn/credentials_server.py")

    /// The base URL (`AWS_EC2_METADATA_SERVICE_ENDPOINT`).
    public var endpoint: String { "http://127.0.0.1:\(port)" }

    private init(port: Int, process: ChildProcess) {
        self.port = port
        self.process = process
    }

    public static func start() async throws -> CredentialsStandIn {
        guard let python = ProcessRunner.which("python3") else { throw LoopbackHTTP.Failure(description: "python3 is not installed") }
        await ServerStartGate.shared.enter()
        defer { ServerStartGate.shared.leave() }
        let port = Loopback.freePort()
        let process = try ProcessRunner.start(python, [script.path, String(port)])
        guard await Loopback.waitForListener(port: port, timeout: 60, while: { process.isRunning }) else {
            process.terminate()
            throw LoopbackHTTP.Failure(description: "the credentials stand-in did not start")
        }
        return CredentialsStandIn(port: port, process: process)
    }

    /// What to hand out: `credentials` (AccessKeyId, SecretAccessKey, Token, Expiration), the token the container
    /// endpoint requires (nil: none), its path, whether the credential answers fail (500) for now, and a URL the
    /// role listing, a role's credentials and the container endpoint redirect to (302; nil: none).
    public func serve(_ credentials: [String: String], containerToken: String? = nil, containerPath: String = "/v2/credentials/syncgate",
                      failing: Bool = false, redirect: String? = nil) throws {
        var settings: [String: Any] = credentials
        settings["container_token"] = containerToken ?? NSNull()
        settings["container_path"] = containerPath
        settings["failing"] = failing
        settings["redirect"] = redirect ?? NSNull()
        _ = try LoopbackHTTP.request(port: port, "POST", "/_control/credentials", body: try JSONSerialization.data(withJSONObject: settings))
    }

    /// Requests answered so far: `token` (IMDSv2 token PUTs), `list` (role listings), `credentials` (a role's
    /// credentials), `container`, `refused` (a request without a valid token or header), `redirected` (302s
    /// answered) and `sts` (STS requests, always refused echoing the web identity token).
    public func counts() throws -> [String: Int] {
        let data = try LoopbackHTTP.request(port: port, "GET", "/_control/counts")
        return (try JSONSerialization.jsonObject(with: data) as? [String: Int]) ?? [:]
    }

    public func stop() { ProcessRunner.stop(process) }

    deinit { stop() }
}
