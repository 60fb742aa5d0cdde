import Foundation
import SyncgateTestSupport
import Testing

/// The real `syncgate` binary to the loopback Sheets server through a real squid (the API's host name resolves only
/// in squid's hosts_file) and behind nginx terminating TLS with a certificate of a CA the test makes.
@Suite(
    "Sheets through a proxy and a private CA", .serialized,
    .enabled(
        if: SheetsTestServer.shouldRun && SquidProxy.shouldRun && NginxTLSProxy.shouldRun,
        "needs python3 with cryptography (scripts/test-deps.d/sheets.sh), squid and nginx (scripts/test-deps.d/network.sh)"))
struct SheetsNetworkTests {
    static let apiHost = "sheets.syncgate.test"
    static let scriptHost = "script.syncgate.test"

    static let neutralEnvironment: [String: String] = [
        "HTTP_PROXY": "", "http_proxy": "", "HTTPS_PROXY": "", "https_proxy": "", "NO_PROXY": "", "no_proxy": "",
        "ALL_PROXY": "", "all_proxy": "", "AWS_CA_BUNDLE": "", "SSL_CERT_FILE": "",
    ]

    struct Workspace {
        let dir: TemporaryDirectory
        var environment = SheetsNetworkTests.neutralEnvironment

        init(keys: String) throws {
            dir = try TemporaryDirectory("sheets-net")
            try dir.write("plugins.yaml", """
                version: 1
                state: .syncgate/state.sqlite
                sources:
                  - name: outbox
                    path: outbox
                destinations:
                  - name: sheet
                    type: sheets
                    rows: file
                    request_timeout: 20s
                    retry: { file: 1, base_delay: 10ms, max_delay: 50ms }
                \(keys.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
                routes:
                  - match: ["**/*"]
                    to: [sheet]
                """)
            try FileManager.default.createDirectory(at: dir.file("outbox"), withIntermediateDirectories: true)
        }

        func run(_ arguments: [String]) async throws -> ProcessResult {
            try await ProcessRunner.run(
                TestPaths.executable("syncgate"), arguments + ["--config", "plugins.yaml"], environment: environment, currentDirectory: dir.url)
        }

        /// The destination away as a whole, its files pending with no attempt: returns its `last_error`.
        func expectAway(code: String = "unreachable", sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
            let result = try await run(["status", "--json"])
            let status = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any] ?? [:]
            let files = status["files"] as? [[String: Any]] ?? []
            #expect(!files.isEmpty, "\(status)", sourceLocation: sourceLocation)
            for file in files {
                #expect(file["status"] as? String == "pending" && file["attempts"] as? Int == 0, "\(file)", sourceLocation: sourceLocation)
            }
            let destination = (status["destinations"] as? [[String: Any]])?.first ?? [:]
            #expect(destination["state"] as? String == "unavailable", "\(destination)", sourceLocation: sourceLocation)
            #expect(destination["error_code"] as? String == code, "\(destination)", sourceLocation: sourceLocation)
            return destination["last_error"] as? String ?? ""
        }
    }

    /// The file names in the sheet (`rows: file`: one row per file, its name after the row id).
    static func names(_ server: SheetsTestServer, spreadsheet: String = "test-spreadsheet") throws -> [String] {
        try server.textRows(spreadsheet: spreadsheet).compactMap { $0.count > 1 ? $0[1] : nil }
    }

    @Test func apiThroughTheProxyTokenDirect() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let squid = try await SquidProxy(hosts: [Self.apiHost: "127.0.0.1"])
        defer { squid.stop() }
        var work = try Workspace(keys: """
            spreadsheet_id: test-spreadsheet
            credentials_file: \(server.keyFile.path)
            api_base: http://\(Self.apiHost):\(server.port)
            """)
        defer { work.dir.remove() }
        try work.dir.write("outbox/report.csv", "x\n1\n")

        let direct = try await work.run(["sync", "--json"])
        #expect(direct.status == 75, "\(direct.output)")
        #expect(try await work.expectAway().contains("cannot connect to http://\(Self.apiHost):\(server.port)"))

        // HTTP_PROXY: the API's requests go through squid; the token endpoint (127.0.0.1, loopback) stays direct.
        work.environment["HTTP_PROXY"] = squid.url
        let sent = try await work.run(["sync", "--json"])
        #expect(sent.status == 0, "\(sent.output)")
        #expect(try Self.names(server).contains("report.csv"), "\((try? server.textRows()) ?? [])")
        let log = await squid.accessLog(waitingFor: "CONNECT \(Self.apiHost):\(server.port)")
        #expect(log.contains { $0.contains("TCP_TUNNEL/200") && $0.contains("CONNECT \(Self.apiHost):\(server.port)") }, "\(log)")
        #expect(!log.contains { $0.contains("127.0.0.1:\(server.port)") }, "the loopback token endpoint went through the proxy: \(log)")
    }

    @Test func appsScriptThroughTheProxyKey() async throws {
        let server = try await SheetsTestServer(appsScriptSecret: "Script-Secret-Net-1")
        defer { server.stop() }
        let squid = try await SquidProxy(hosts: [Self.scriptHost: "127.0.0.1"])
        defer { squid.stop() }
        var work = try Workspace(keys: """
            apps_script_url: http://\(Self.scriptHost):\(server.port)/macros/s/AKfycbTEST/exec
            secret: Script-Secret-Net-1
            proxy: \(squid.url)
            """)
        defer { work.dir.remove() }
        work.environment["HTTP_PROXY"] = "http://127.0.0.1:1"  // the key wins
        try work.dir.write("outbox/tracked.json", "{}")
        let sent = try await work.run(["sync", "--json"])
        #expect(sent.status == 0, "\(sent.output)")
        #expect(try Self.names(server, spreadsheet: "apps-script-AKfycbTEST").contains("tracked.json"))
        // The post and the redirect it answers (to 127.0.0.1, the echo host) both went through the key's proxy.
        let log = await squid.accessLog(waitingFor: "CONNECT 127.0.0.1:\(server.port)")
        #expect(log.contains { $0.contains("CONNECT \(Self.scriptHost):\(server.port)") }, "\(log)")
        #expect(log.contains { $0.contains("CONNECT 127.0.0.1:\(server.port)") }, "\(log)")
    }

    @Test func privateCARefusedThenTrustedThroughSSLCertFileAndCAFile() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let ca = try await TestCertificateAuthority(name: "company CA")
        defer { ca.remove() }
        let nginx = try await NginxTLSProxy(upstreamPort: server.port, certificate: try await ca.issue(hosts: ["localhost"]))
        defer { nginx.stop() }
        let keys = """
            spreadsheet_id: test-spreadsheet
            credentials_file: \(server.keyFile.path)
            api_base: https://localhost:\(nginx.port)
            """
        var work = try Workspace(keys: keys)
        defer { work.dir.remove() }
        try work.dir.write("outbox/first.csv", "x\n1\n")

        #expect(try await work.run(["sync", "--json"]).status == 75)
        let refusal = try await work.expectAway()
        #expect(refusal.contains("certificate is not signed by a CA trusted here"), "\(refusal)")
        #expect(refusal.contains("ca_file or SSL_CERT_FILE"), "\(refusal)")
        // AWS_CA_BUNDLE is the S3 destination's, not this one's.
        work.environment["AWS_CA_BUNDLE"] = ca.certificate.path
        #expect(try await work.run(["sync", "--json"]).status == 75)
        _ = try await work.expectAway()
        #expect(try server.textRows().isEmpty)

        work.environment["SSL_CERT_FILE"] = ca.certificate.path
        let trusted = try await work.run(["sync", "--json"])
        #expect(trusted.status == 0, "\(trusted.output)")
        #expect(try Self.names(server).contains("first.csv"))

        var keyed = try Workspace(keys: keys + "\nca_file: company-ca.pem")
        defer { keyed.dir.remove() }
        try FileManager.default.copyItem(at: ca.certificate, to: keyed.dir.file("company-ca.pem"))
        try keyed.dir.write("outbox/second.csv", "x\n2\n")
        keyed.environment["SSL_CERT_FILE"] = "/nonexistent/ignored.pem"  // ca_file comes first
        let sent = try await keyed.run(["sync", "--json"])
        #expect(sent.status == 0, "\(sent.output)")
        #expect(try Self.names(server).contains("second.csv"))
        #expect(nginx.accessLog().contains { $0.contains(":append") }, "\(nginx.accessLog())")
    }
}
