import Foundation

/// Debian's nginx terminating TLS on a free loopback port in front of a plain-HTTP test server (moto, the Sheets
/// server), with a certificate of the test's own CA (``TestCertificateAuthority``). Started in a temporary folder
/// (never the system service), stopped by ``stop()``. The Host header is passed on unchanged, so that SigV4
/// signatures (which cover it) still verify at moto; request and answer bodies stream through unbuffered.
public final class NginxTLSProxy: @unchecked Sendable {
    public let port: Int
    public let directory: TemporaryDirectory
    private var process: ChildProcess?

    public static let nginxPath = "/usr/sbin/nginx"

    /// Why nginx (or openssl, for its certificate) cannot run here, or nil.
    public static let unavailableReason: String? = {
        guard FileManager.default.isExecutableFile(atPath: nginxPath) else {
            return "nginx is not installed (scripts/test-deps.d/network.sh installs it)"
        }
        return TestCertificateAuthority.unavailableReason
    }()

    /// True when tests that need nginx should run: it is there, or `SYNCGATE_REQUIRE_SERVERS=1`.
    public static var shouldRun: Bool { unavailableReason == nil || TestPaths.serversRequired }

    public init(upstreamPort: Int, certificate: TestCertificateAuthority.Issued) async throws {
        if let reason = NginxTLSProxy.unavailableReason { throw NginxTLSProxyError("cannot start nginx: \(reason)") }
        directory = try TemporaryDirectory("nginx")
        // Started as root, nginx's worker runs as `nobody`: its temporary folders are in this one.
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: directory.path)
        let dir = directory.path
        await ServerStartGate.shared.enter()
        defer { ServerStartGate.shared.leave() }
        var failure = ""
        for _ in 0..<3 {
            let port = Loopback.freePort()
            try directory.write("nginx.conf", """
                worker_processes 1;
                daemon off;
                pid \(dir)/nginx.pid;
                error_log \(dir)/error.log info;
                events { worker_connections 256; }
                http {
                  access_log \(dir)/access.log;
                  client_body_temp_path \(dir)/body;
                  proxy_temp_path \(dir)/proxy;
                  fastcgi_temp_path \(dir)/fastcgi;
                  uwsgi_temp_path \(dir)/uwsgi;
                  scgi_temp_path \(dir)/scgi;
                  client_max_body_size 0;
                  server {
                    listen 127.0.0.1:\(port) ssl;
                    ssl_certificate \(certificate.certificate.path);
                    ssl_certificate_key \(certificate.key.path);
                    location / {
                      proxy_pass http://127.0.0.1:\(upstreamPort);
                      proxy_set_header Host $http_host;
                      proxy_http_version 1.1;
                      proxy_set_header Connection "";
                      proxy_request_buffering off;
                      proxy_buffering off;
                      proxy_read_timeout 120s;
                    }
                  }
                }

                """)
            let process = try ProcessRunner.start(
                URL(fileURLWithPath: NginxTLSProxy.nginxPath), ["-p", dir, "-c", "\(dir)/nginx.conf", "-e", "\(dir)/error.log"],
                logFile: directory.file("nginx.out"))
            if await Loopback.waitForListener(port: port, timeout: 30, while: { process.isRunning }), process.isRunning {
                self.port = port
                self.process = process
                return
            }
            ProcessRunner.stop(process)
            let log = ((try? String(contentsOf: directory.file("error.log"), encoding: .utf8)) ?? "")
                + ((try? String(contentsOf: directory.file("nginx.out"), encoding: .utf8)) ?? "")
            failure = "nginx did not listen on 127.0.0.1:\(port): \(log.suffix(1500))"
            guard log.contains("Address already in use") else { break }
        }
        directory.remove()
        throw NginxTLSProxyError(failure)
    }

    /// The access log's lines (one per request nginx passed on).
    public func accessLog() -> [String] {
        ((try? String(contentsOf: directory.file("access.log"), encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// Stops nginx (SIGTERM: a fast shutdown; SIGKILL after 5 s) and removes its folder. Idempotent.
    public func stop() {
        if let process {
            self.process = nil
            ProcessRunner.stop(process)
        }
        directory.remove()
    }

    deinit { stop() }

}

public struct NginxTLSProxyError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
