import Foundation

/// Debian's squid as a forward HTTP proxy on a free loopback port, started by a test in a temporary folder (never
/// the system service) and stopped by it (``stop()``, from a `defer`). Its `hosts_file` maps test host names
/// (`s3.syncgate.test`) to 127.0.0.1, so a server behind such a name is reachable through the proxy only: the
/// machine itself does not resolve it. With `user`, the proxy asks for Basic authorization (squid's
/// basic_ncsa_auth, an APR1 password file made with openssl). Its access log lists every request
/// (``accessLog()``: `CONNECT s3.syncgate.test:PORT`, written when the tunnel closes).
public final class SquidProxy: @unchecked Sendable {
    public let port: Int
    public let directory: TemporaryDirectory
    private var process: ChildProcess?

    public static let squidPath = "/usr/sbin/squid"
    public static let authHelperPath = "/usr/lib/squid/basic_ncsa_auth"

    /// Why squid cannot run here, or nil.
    public static let unavailableReason: String? = {
        guard FileManager.default.isExecutableFile(atPath: squidPath) else {
            return "squid is not installed (scripts/test-deps.d/network.sh installs it)"
        }
        return TestCertificateAuthority.unavailableReason
    }()

    /// True when tests that need squid should run: it is there, or `SYNCGATE_REQUIRE_SERVERS=1` (then a missing
    /// squid fails them).
    public static var shouldRun: Bool { unavailableReason == nil || TestPaths.serversRequired }

    /// `http://127.0.0.1:PORT`, or with the user and password when given.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// `hosts`: name -> address, for squid's hosts_file.
    public init(hosts: [String: String], user: (name: String, password: String)? = nil) async throws {
        if let reason = SquidProxy.unavailableReason { throw SquidProxyError("cannot start squid: \(reason)") }
        directory = try TemporaryDirectory("squid")
        // Started as root, squid works as the `proxy` user: its logs go in this folder.
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory.path)
        let dir = directory.path
        try directory.write("hosts", hosts.map { "\($0.value) \($0.key)" }.sorted().joined(separator: "\n") + "\n")
        var access = "http_access allow localhost\n"
        if let user {
            let hash = try await ProcessRunner.run(ProcessRunner.which("openssl")!, ["passwd", "-apr1", user.password], timeout: 30)
            guard hash.status == 0 else { throw SquidProxyError("openssl passwd failed: \(hash.stderr)") }
            try directory.write("passwd", "\(user.name):\(hash.stdout.trimmingCharacters(in: .whitespacesAndNewlines))\n")
            access = """
                auth_param basic program \(SquidProxy.authHelperPath) \(dir)/passwd
                auth_param basic realm syncgate-test
                acl authenticated proxy_auth REQUIRED
                http_access allow localhost authenticated

                """
        }
        await ServerStartGate.shared.enter()
        defer { ServerStartGate.shared.leave() }
        var failure = ""
        // A port free a moment ago can be taken by another program meanwhile: then squid exits and starts again.
        for _ in 0..<3 {
            let port = Loopback.freePort()
            try directory.write("squid.conf", """
                http_port 127.0.0.1:\(port)
                pid_filename \(dir)/squid.pid
                access_log stdio:\(dir)/access.log
                cache_log \(dir)/cache.log
                cache_store_log none
                cache deny all
                cache_mem 8 MB
                coredump_dir \(dir)
                hosts_file \(dir)/hosts
                dns_nameservers 127.0.0.1
                dns_timeout 2 seconds
                icp_port 0
                htcp_port 0
                pinger_enable off
                shutdown_lifetime 0 seconds
                logfile_rotate 0
                netdb_filename none
                visible_hostname syncgate-test-proxy
                \(access)http_access deny all

                """)
            let process = try ProcessRunner.start(
                URL(fileURLWithPath: SquidProxy.squidPath), ["-N", "-f", "\(dir)/squid.conf"], logFile: directory.file("squid.out"))
            if await Loopback.waitForListener(port: port, timeout: 60, while: { process.isRunning }), process.isRunning {
                self.port = port
                self.process = process
                return
            }
            ProcessRunner.stop(process)
            let log = ((try? String(contentsOf: directory.file("cache.log"), encoding: .utf8)) ?? "")
                + ((try? String(contentsOf: directory.file("squid.out"), encoding: .utf8)) ?? "")
            failure = "squid did not listen on 127.0.0.1:\(port): \(log.suffix(1500))"
            guard log.contains("Address already in use") else { break }
        }
        directory.remove()
        throw SquidProxyError(failure)
    }

    /// The access log's lines so far. squid writes a tunnel's line when it closes: `waitingFor` polls (at most
    /// `timeout` seconds) until some line contains it.
    public func accessLog(waitingFor text: String? = nil, timeout: TimeInterval = 10) async -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let lines = ((try? String(contentsOf: directory.file("access.log"), encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            guard let text, !lines.contains(where: { $0.contains(text) }), Date() < deadline else { return lines }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Stops squid (SIGTERM, then SIGKILL after 5 s) and removes its folder. Idempotent.
    public func stop() {
        if let process {
            self.process = nil
            ProcessRunner.stop(process)
        }
        directory.remove()
    }

    deinit { stop() }

}

public struct SquidProxyError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
