import Foundation
import SyncgateTestSupport
import Testing

/// The real `syncgate` binary against nginx terminating TLS (a certificate signed by a CA the test makes) in front of
/// moto: refused without trust (the destination unavailable, naming the certificate problem, the files pending),
/// trusted through AWS_CA_BUNDLE, `ca_file` and SSL_CERT_FILE, in that precedence.
@Suite(
    "S3 over TLS with a private CA (nginx)",
    .enabled(if: S3TestGate.motoEnabled && NginxTLSProxy.shouldRun, "needs moto (scripts/test-deps.d/s3.sh) and nginx (scripts/test-deps.d/network.sh)"))
struct S3TLSTrustTests {
    /// moto behind nginx on `https://localhost:PORT`, the CA that signed nginx's certificate, and another CA.
    struct Servers {
        let moto: S3TestServer
        let ca: TestCertificateAuthority
        let otherCA: TestCertificateAuthority
        let nginx: NginxTLSProxy
        var endpoint: String { "https://localhost:\(nginx.port)" }

        init(bucket: String) async throws {
            moto = try await S3TestServer(buckets: [bucket])
            ca = try await TestCertificateAuthority(name: "company CA")
            otherCA = try await TestCertificateAuthority(name: "unrelated CA")
            nginx = try await NginxTLSProxy(upstreamPort: moto.port, certificate: try await ca.issue(hosts: ["localhost", "127.0.0.1"]))
        }

        func stop() {
            nginx.stop()
            moto.stop()
            ca.remove()
            otherCA.remove()
        }

        func stored(_ bucket: String) async throws -> [String: Data] {
            let folder = try TemporaryDirectory("s3-tls-read")
            defer { folder.remove() }
            return try await moto.objects(bucket: bucket, into: folder.url).mapValues(\.data)
        }
    }

    @Test func refusedWithoutTrustThenTrustedThroughAWSCABundle() async throws {
        let servers = try await Servers(bucket: "tls")
        defer { servers.stop() }
        var work = try S3NetworkWorkspace(endpoint: servers.endpoint, bucket: "tls", server: servers.moto)
        defer { work.remove() }
        try work.dir.write("outbox/a.txt", "private CA\n")
        try work.dir.write("outbox/b.txt", "waits too\n")

        let refused = try await work.run(["sync", "--json"])
        #expect(refused.status == 75, "the files wait for the destination: \(refused.output)")
        let message = try await work.expectDestinationAway(code: "tls")
        #expect(message.contains("TLS handshake failed"), "\(message)")
        #expect(message.contains("certificate is not signed by a CA trusted here"), "\(message)")
        #expect(message.contains("CERTIFICATE_VERIFY_FAILED"), "\(message)")
        #expect(message.contains("ca_file, AWS_CA_BUNDLE or SSL_CERT_FILE"), "\(message)")
        #expect(!servers.nginx.accessLog().contains { $0.contains("PUT ") }, "nothing was sent over the untrusted connection")

        // A bundle of another CA does not help (and the message names it).
        work.environment["AWS_CA_BUNDLE"] = servers.otherCA.certificate.path
        #expect(try await work.run(["sync", "--json"]).status == 75)
        #expect(try await work.expectDestinationAway(code: "tls").contains("the CA bundle \(servers.otherCA.certificate.path) (AWS_CA_BUNDLE)"))

        work.environment["AWS_CA_BUNDLE"] = servers.ca.certificate.path
        let trusted = try await work.run(["sync", "--json"])
        #expect(trusted.status == 0, "\(trusted.output)")
        #expect(S3NetworkWorkspace.summary(trusted)?["uploaded"] as? Int == 2)
        let stored = try await servers.stored("tls")
        #expect(stored["a.txt"] == Data("private CA\n".utf8) && stored["b.txt"] == Data("waits too\n".utf8))
        #expect(servers.nginx.accessLog().contains { $0.contains("PUT /tls/a.txt") }, "the upload went through nginx's TLS")
    }

    @Test func caFileWinsOverTheEnvironment() async throws {
        let servers = try await Servers(bucket: "cafile")
        defer { servers.stop() }
        var work = try S3NetworkWorkspace(
            endpoint: servers.endpoint, bucket: "cafile", server: servers.moto, destinationKeys: "ca_file: certs/company-ca.pem")
        defer { work.remove() }
        try FileManager.default.createDirectory(at: work.dir.file("certs"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: servers.ca.certificate, to: work.dir.file("certs/company-ca.pem"))
        // Both variables name a bundle without the CA: `ca_file` (relative to the config file) wins.
        work.environment["AWS_CA_BUNDLE"] = servers.otherCA.certificate.path
        work.environment["SSL_CERT_FILE"] = servers.otherCA.certificate.path
        try work.dir.write("outbox/c.txt", "ca_file")
        let sent = try await work.run(["sync", "--json"])
        #expect(sent.status == 0, "\(sent.output)")
        #expect(try await servers.stored("cafile")["c.txt"] == Data("ca_file".utf8))
    }

    @Test func sslCertFileIsTrustedAndAWSCABundleComesFirst() async throws {
        let servers = try await Servers(bucket: "sslcert")
        defer { servers.stop() }
        var work = try S3NetworkWorkspace(endpoint: servers.endpoint, bucket: "sslcert", server: servers.moto)
        defer { work.remove() }
        try work.dir.write("outbox/d.txt", "SSL_CERT_FILE")
        work.environment["SSL_CERT_FILE"] = servers.ca.certificate.path
        work.environment["AWS_CA_BUNDLE"] = servers.otherCA.certificate.path
        #expect(try await work.run(["sync", "--json"]).status == 75, "AWS_CA_BUNDLE comes before SSL_CERT_FILE")
        #expect(try await work.expectDestinationAway(code: "tls").contains("(AWS_CA_BUNDLE)"))
        work.environment["AWS_CA_BUNDLE"] = ""
        let sent = try await work.run(["sync", "--json"])
        #expect(sent.status == 0, "\(sent.output)")
        #expect(try await servers.stored("sslcert")["d.txt"] == Data("SSL_CERT_FILE".utf8))
    }
}

/// Network settings that cannot be used are config errors, located and naming the file or variable: checked with
/// `validate`, no server needed.
@Suite("S3 network config errors")
struct S3NetworkConfigErrorTests {
    func workspace(_ keys: String, environment: [String: String] = [:]) throws -> (TemporaryDirectory, [String: String]) {
        let dir = try TemporaryDirectory("s3-net-config")
        try FileManager.default.createDirectory(at: dir.file("outbox"), withIntermediateDirectories: true)
        try dir.write("plugins.yaml", """
            version: 1
            sources:
              - name: outbox
                path: outbox
            destinations:
              - name: bucket
                type: s3
                endpoint: https://s3.example.test
                bucket: b
                access_key_id: AKIDEXAMPLE0000000000
                secret_access_key: wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
            \(keys.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
            """)
        return (dir, S3NetworkWorkspace.neutralEnvironment.merging(environment) { $1 })
    }

    func validate(_ dir: TemporaryDirectory, _ environment: [String: String]) async throws -> ProcessResult {
        try await ProcessRunner.run(
            TestPaths.executable("syncgate"), ["validate", "--config", dir.file("plugins.yaml").path], environment: environment,
            currentDirectory: dir.url)
    }

    @Test func missingCAFileIsLocated() async throws {
        let (dir, env) = try workspace("ca_file: missing-ca.pem")
        defer { dir.remove() }
        let result = try await validate(dir, env)
        #expect(result.status == 78, "\(result.output)")
        #expect(result.stderr.contains("plugins.yaml:12:"), "the line of ca_file: \(result.stderr)")
        #expect(result.stderr.contains("destinations[0].ca_file"), "\(result.stderr)")
        #expect(result.stderr.contains("\(dir.file("missing-ca.pem").path) does not exist"), "\(result.stderr)")
    }

    @Test func aCAFileWithoutCertificatesIsRefused() async throws {
        let (dir, env) = try workspace("ca_file: notes.txt")
        defer { dir.remove() }
        try dir.write("notes.txt", "not a certificate\n")
        let result = try await validate(dir, env)
        #expect(result.status == 78)
        #expect(result.stderr.contains("holds no PEM certificate"), "\(result.stderr)")
    }

    @Test func aMissingBundleInTheEnvironmentIsNamed() async throws {
        let (dir, env) = try workspace("", environment: ["AWS_CA_BUNDLE": "/nonexistent/bundle.pem"])
        defer { dir.remove() }
        let result = try await validate(dir, env)
        #expect(result.status == 78, "\(result.output)")
        #expect(result.stderr.contains("/nonexistent/bundle.pem does not exist"), "\(result.stderr)")
        #expect(result.stderr.contains("AWS_CA_BUNDLE"), "\(result.stderr)")
    }

    @Test func malformedProxiesAreLocatedWithoutThePassword() async throws {
        let (dir, env) = try workspace("proxy: https://alice:Key-Proxy-Pw-77@proxy.example.test:3128")
        defer { dir.remove() }
        let result = try await validate(dir, env)
        #expect(result.status == 78)
        #expect(result.stderr.contains("plugins.yaml:12:") && result.stderr.contains("destinations[0].proxy"), "\(result.stderr)")
        #expect(result.stderr.contains("not supported"), "\(result.stderr)")
        #expect(!result.output.contains("Key-Proxy-Pw-77"))

        let (envDir, badEnv) = try workspace("", environment: ["HTTPS_PROXY": "socks5://bob:Env-Proxy-Pw-77@proxy:1080"])
        defer { envDir.remove() }
        let fromEnvironment = try await validate(envDir, badEnv)
        #expect(fromEnvironment.status == 78)
        #expect(fromEnvironment.stderr.contains("HTTPS_PROXY") && fromEnvironment.stderr.contains("SOCKS"), "\(fromEnvironment.stderr)")
        #expect(!fromEnvironment.output.contains("Env-Proxy-Pw-77"))
    }
}
