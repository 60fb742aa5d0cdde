import Foundation
import SyncgateTestSupport
import Testing

/// The real `syncgate` binary and a real squid in front of moto (signature checking on), the server reachable only
/// through the proxy: its host name, `s3.syncgate.test`, resolves in squid's hosts_file and nowhere else.
@Suite(
    "S3 through an HTTP proxy (squid)",
    .enabled(if: S3TestGate.motoEnabled && SquidProxy.shouldRun, "needs moto (scripts/test-deps.d/s3.sh) and squid (scripts/test-deps.d/network.sh)"))
struct S3ProxyTests {
    static let host = S3NetworkWorkspace.proxiedHost

    @Test func reachableOnlyThroughTheProxy() async throws {
        let server = try await S3TestServer(buckets: ["proxied"], pathStyleOnly: true)
        defer { server.stop() }
        let squid = try await SquidProxy(hosts: [Self.host: "127.0.0.1"])
        defer { squid.stop() }
        var work = try S3NetworkWorkspace(endpoint: "http://\(Self.host):\(server.port)", bucket: "proxied", server: server)
        defer { work.remove() }
        try work.dir.write("outbox/a.txt", "through the proxy\n")
        try work.dir.write("outbox/dir/b.bin", S3TestFiles.bytes(300_000, seed: 7))

        // No proxy: the name does not resolve here; the destination is away, the files wait.
        let direct = try await work.run(["sync", "--json"])
        #expect(direct.status == 75, "\(direct.output)")
        let directError = try await work.expectDestinationAway(code: "connection")
        #expect(directError.contains("does not resolve"), "\(directError)")

        // NO_PROXY covering the host: direct as well, and the proxy is never asked.
        work.environment["HTTP_PROXY"] = squid.url
        work.environment["NO_PROXY"] = "localhost, .syncgate.test"
        let bypassed = try await work.run(["sync", "--json"])
        #expect(bypassed.status == 75, "\(bypassed.output)")
        #expect(try await work.expectDestinationAway(code: "connection").contains("does not resolve"))
        // (a lower-case no_proxy wins over NO_PROXY, as in curl)
        work.environment["NO_PROXY"] = ""
        work.environment["no_proxy"] = "syncgate.test"
        #expect(try await work.run(["sync", "--json"]).status == 75)
        // (The start-up check's bare connection is logged as `error:transaction-end-before-headers`.)
        let unused = await squid.accessLog()
        #expect(!unused.contains { $0.contains("CONNECT") || $0.contains(Self.host) }, "the proxy was used although NO_PROXY lists the host: \(unused)")

        // HTTP_PROXY: everything goes through squid and lands.
        work.environment["no_proxy"] = ""
        let proxied = try await work.run(["sync", "--json"])
        #expect(proxied.status == 0, "\(proxied.output)")
        #expect(S3NetworkWorkspace.summary(proxied)?["uploaded"] as? Int == 2, "\(proxied.stdout)")
        let readBack = try TemporaryDirectory("s3-proxied")
        defer { readBack.remove() }
        let stored = try await server.objects(bucket: "proxied", into: readBack.url)
        #expect(stored["a.txt"]?.data == Data("through the proxy\n".utf8))
        #expect(stored["dir/b.bin"]?.data == S3TestFiles.bytes(300_000, seed: 7))
        let log = await squid.accessLog(waitingFor: "CONNECT \(Self.host):\(server.port)")
        #expect(log.contains { $0.contains("TCP_TUNNEL/200") && $0.contains("CONNECT \(Self.host):\(server.port)") }, "\(log)")
        #expect(server.requests("PUT").count >= 2, "moto saw the uploads")
        let status = try await work.status().json
        #expect((status["destinations"] as? [[String: Any]])?.first?["state"] as? String == "available", "\(status)")
    }

    @Test func theProxyKeyOverridesTheEnvironment() async throws {
        let server = try await S3TestServer(buckets: ["keyed"], pathStyleOnly: true)
        defer { server.stop() }
        let squid = try await SquidProxy(hosts: [Self.host: "127.0.0.1"])
        defer { squid.stop() }
        let endpoint = "http://\(Self.host):\(server.port)"

        // A dead proxy in the environment is used (it was ignored before): the destination is away, saying so.
        var dead = try S3NetworkWorkspace(endpoint: endpoint, bucket: "keyed", server: server)
        defer { dead.remove() }
        dead.environment["HTTP_PROXY"] = "http://127.0.0.1:1"
        try dead.dir.write("outbox/a.txt", "a")
        #expect(try await dead.run(["sync", "--json"]).status == 75)
        let deadError = try await dead.expectDestinationAway(code: "connection")
        #expect(deadError.contains("through the proxy http://127.0.0.1:1"), "\(deadError)")
        #expect(deadError.contains("connection refused"), "\(deadError)")

        // `proxy:` wins over the dead one.
        var keyed = try S3NetworkWorkspace(endpoint: endpoint, bucket: "keyed", server: server, destinationKeys: "proxy: \(squid.url)")
        defer { keyed.remove() }
        keyed.environment["HTTP_PROXY"] = "http://127.0.0.1:1"
        keyed.environment["NO_PROXY"] = "*"
        try keyed.dir.write("outbox/k.txt", "keyed")
        let sent = try await keyed.run(["sync", "--json"])
        #expect(sent.status == 0, "\(sent.output)")
        let readBack = try TemporaryDirectory("s3-keyed")
        defer { readBack.remove() }
        #expect(try await server.objects(bucket: "keyed", into: readBack.url)["k.txt"]?.data == Data("keyed".utf8))
        #expect(await squid.accessLog(waitingFor: "CONNECT").contains { $0.contains("CONNECT \(Self.host):\(server.port)") })

        // `proxy: none` goes direct whatever HTTP_PROXY says.
        var none = try S3NetworkWorkspace(endpoint: endpoint, bucket: "keyed", server: server, destinationKeys: "proxy: none")
        defer { none.remove() }
        none.environment["HTTP_PROXY"] = squid.url
        try none.dir.write("outbox/n.txt", "none")
        #expect(try await none.run(["sync", "--json"]).status == 75)
        #expect(try await none.expectDestinationAway(code: "connection").contains("does not resolve"))
    }

    @Test func proxyPasswordWorksAndNeverShows() async throws {
        let server = try await S3TestServer(buckets: ["authed"], pathStyleOnly: true)
        defer { server.stop() }
        let password = "Pr0xy-Passw0rd-Zq81"
        let squid = try await SquidProxy(hosts: [Self.host: "127.0.0.1"], user: (name: "syncgate", password: password))
        defer { squid.stop() }
        var work = try S3NetworkWorkspace(endpoint: "http://\(Self.host):\(server.port)", bucket: "authed", server: server)
        defer { work.remove() }
        try work.dir.write("outbox/a.txt", "authorised")
        let basic = Data("syncgate:\(password)".utf8).base64EncodedString()
        var outputs: [String] = []

        // A wrong password: the proxy refuses (407): blocked until the settings change, with no attempt counted.
        work.environment["HTTP_PROXY"] = "http://syncgate:Wrong-Passw0rd-Zq81@127.0.0.1:\(squid.port)"
        let refused = try await work.run(["sync", "--json", "-vv"])
        outputs.append(refused.output)
        #expect(refused.status != 0)
        let refusal = try await work.expectDestinationAway(state: "blocked", code: "proxy-auth")
        #expect(refusal.contains("407"), "\(refusal)")
        #expect(refusal.contains("http://syncgate@127.0.0.1:\(squid.port)"), "the proxy is named, without its password: \(refusal)")
        outputs.append(try await work.status().text)

        // The right one (a settings change: the blocked destination is tried again at once).
        work.environment["HTTP_PROXY"] = "http://syncgate:\(password)@127.0.0.1:\(squid.port)"
        let sent = try await work.run(["sync", "--json", "-vv"])
        outputs.append(sent.output)
        #expect(sent.status == 0, "\(sent.output)")
        let readBack = try TemporaryDirectory("s3-authed")
        defer { readBack.remove() }
        #expect(try await server.objects(bucket: "authed", into: readBack.url)["a.txt"]?.data == Data("authorised".utf8))
        #expect(await squid.accessLog(waitingFor: "TCP_TUNNEL/200").contains { $0.contains("TCP_TUNNEL/200") && $0.contains(" syncgate ") })
        outputs.append(try await work.status().text)
        let validate = try await work.run(["validate"])
        #expect(validate.stdout.contains("network: through the proxy http://syncgate@127.0.0.1:\(squid.port) (HTTP_PROXY)"), "\(validate.output)")
        outputs.append(validate.output)
        outputs.append(try await work.run(["status", "--check"]).output)

        let everything = outputs.joined(separator: "\n")
        for secret in [password, "Wrong-Passw0rd-Zq81", basic] {
            #expect(!everything.contains(secret), "a proxy password (or its Basic header) showed")
        }
        let database = try Data(contentsOf: work.dir.file(".syncgate/state.sqlite"))
        #expect(database.range(of: Data(password.utf8)) == nil && database.range(of: Data("Wrong-Passw0rd-Zq81".utf8)) == nil, "a password reached the ledger")
    }

    /// Web identity: STS (moto's, at the same made-up name) is asked through the destination's proxy too, so the
    /// credentials arrive only through squid. moto checks no signatures here (it would refuse the role's fresh keys).
    @Test func stsIsAskedThroughTheProxy() async throws {
        let server = try await S3TestServer(auth: false, buckets: ["federated"], pathStyleOnly: true)
        defer { server.stop() }
        let squid = try await SquidProxy(hosts: [Self.host: "127.0.0.1"])
        defer { squid.stop() }
        let origin = "http://\(Self.host):\(server.port)"
        var work = try S3NetworkWorkspace(endpoint: origin, bucket: "federated", server: server, keys: false)
        defer { work.remove() }
        let token = try work.dir.write("token", "eyJhbGciOiJSUzI1NiJ9.test-web-identity-token.signature")
        work.environment.merge([
            "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_PROFILE": "", "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
            "AWS_WEB_IDENTITY_TOKEN_FILE": token.path, "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/uploader",
            "AWS_ENDPOINT_URL_STS": origin, "AWS_EC2_METADATA_DISABLED": "true", "HTTP_PROXY": squid.url,
        ]) { $1 }
        try work.dir.write("outbox/f.txt", "federated")
        let sent = try await work.run(["sync", "--json"])
        #expect(sent.status == 0, "\(sent.output)")
        let readBack = try TemporaryDirectory("s3-federated")
        defer { readBack.remove() }
        #expect(try await server.objects(bucket: "federated", into: readBack.url)["f.txt"]?.data == Data("federated".utf8))
        #expect(server.requests("POST").contains { $0.contains("\"POST / ") }, "STS was asked: \(server.log().suffix(2000))")
        #expect(await squid.accessLog(waitingFor: "CONNECT").contains { $0.contains("CONNECT \(Self.host):\(server.port)") })
    }

    /// An https endpoint through the proxy: a CONNECT tunnel to nginx (TLS, a certificate of the test's CA) in front
    /// of moto, trusted through AWS_CA_BUNDLE; HTTP_PROXY (dead) is not the one https uses.
    @Test func httpsThroughTheProxyTunnel() async throws {
        let server = try await S3TestServer(buckets: ["tunnel"], pathStyleOnly: true)
        defer { server.stop() }
        let ca = try await TestCertificateAuthority()
        defer { ca.remove() }
        let nginx = try await NginxTLSProxy(upstreamPort: server.port, certificate: try await ca.issue(hosts: [Self.host]))
        defer { nginx.stop() }
        let squid = try await SquidProxy(hosts: [Self.host: "127.0.0.1"])
        defer { squid.stop() }
        var work = try S3NetworkWorkspace(endpoint: "https://\(Self.host):\(nginx.port)", bucket: "tunnel", server: server)
        defer { work.remove() }
        try work.dir.write("outbox/secure.txt", "over TLS through CONNECT")
        work.environment["HTTP_PROXY"] = "http://127.0.0.1:1"
        work.environment["HTTPS_PROXY"] = squid.url
        work.environment["AWS_CA_BUNDLE"] = ca.certificate.path
        let sent = try await work.run(["sync", "--json"])
        #expect(sent.status == 0, "\(sent.output)")
        let readBack = try TemporaryDirectory("s3-tunnel")
        defer { readBack.remove() }
        #expect(try await server.objects(bucket: "tunnel", into: readBack.url)["secure.txt"]?.data == Data("over TLS through CONNECT".utf8))
        let log = await squid.accessLog(waitingFor: "CONNECT \(Self.host):\(nginx.port)")
        #expect(log.contains { $0.contains("TCP_TUNNEL/200") && $0.contains("CONNECT \(Self.host):\(nginx.port)") }, "\(log)")
        #expect(nginx.accessLog().contains { $0.contains("PUT /tunnel/secure.txt") }, "\(nginx.accessLog())")
    }
}
