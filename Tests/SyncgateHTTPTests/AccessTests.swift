import Foundation
import Logging
import SyncgateCore
import SyncgateTestSupport
import Testing

/// The token, origin and host rules (docs/http.md, "Access") with real requests: what is refused changes
/// nothing, and the token is never sent back, shown or logged.
@Suite("who may read and change over HTTP")
struct AccessTests {
    static let token = "test-token-\(UUID().uuidString)"

    /// Whether `report.csv` is still failed (a refused retry or forget left it alone).
    static func stillFailed(_ gateway: TestGateway) async throws -> Bool {
        try await gateway.settle()
        return try await gateway.ledger.entries().first { $0.file.path == "report.csv" }?.status == .failed
    }

    @Test func loopbackWithoutATokenRefusesChangesFromOtherOriginsAndRebindingHosts() async throws {
        let gateway = try await StatusServerTests.gatewayWithAFailure()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway)
        let http = HTTPCall(base: server.base)
        #expect(try await http.get("/api/status").status == 200)

        // A page on another site posting to the gateway.
        var answer = try await http.post("/api/retry", json: "{}", headers: [("Origin", "http://evil.example")])
        #expect(answer.status == 403)
        #expect(answer.errorMessage?.contains("origin") == true || answer.errorMessage?.contains("Origin") == true)
        answer = try await http.post("/api/forget", json: "{}", headers: [("Origin", "null")])
        #expect(answer.status == 403)
        answer = try await http.post("/api/forget", json: "{}", headers: [("Origin", "http://127.0.0.1:\(server.port + 1)")])
        #expect(answer.status == 403, "another port is another origin")
        answer = try await http.post("/api/forget", json: "{}", headers: [("Sec-Fetch-Site", "cross-site")])
        #expect(answer.status == 403)
        #expect(try await AccessTests.stillFailed(gateway))

        // A name of the attacker's that resolves to 127.0.0.1 (DNS rebinding): neither read nor change.
        answer = try await http.get("/api/status", headers: [("Host", "evil.example:\(server.port)")])
        #expect(answer.status == 403)
        #expect(!answer.body.contains("report.csv"))
        answer = try await http.post("/api/forget", json: "{}", headers: [("Host", "evil.example:\(server.port)")])
        #expect(answer.status == 403)
        #expect(try await AccessTests.stillFailed(gateway))
        #expect(try await http.get("/api/status", headers: [("Host", "localhost:\(server.port)")]).status == 200)

        // A token where none is configured is an error, not ignored.
        #expect(try await http.get("/api/status", headers: [("Authorization", "Bearer something")]).status == 401)

        // The page's own origin, and a client that is no browser (no Origin): allowed.
        answer = try await http.post("/api/retry", json: #"{"paths": ["nothing.txt"]}"#, headers: [("Origin", server.base), ("Sec-Fetch-Site", "same-origin")])
        #expect(answer.status == 200)
        answer = try await http.post("/api/forget", json: "{}")
        #expect(answer.json as? [String: Int] == ["forgotten": 1])
        try await server.stop()
    }

    /// DNS rebinding against a loopback listener that has a token (issue 26): a page whose own name the attacker
    /// points at 127.0.0.1 is refused on every endpoint, with or without the token; a page served over https on the
    /// same host and port is another origin.
    @Test func onLoopbackWithATokenARebindingHostIsRefusedEverywhere() async throws {
        let gateway = try await StatusServerTests.gatewayWithAFailure()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway, token: AccessTests.token)
        let http = HTTPCall(base: server.base)
        let bearer = [("Authorization", "Bearer " + AccessTests.token)]
        let rebound = [("Host", "evil.example:\(server.port)")]
        let paths = ["/", "/app.js", "/app.css", "/favicon.svg", "/healthz", "/readyz", "/metrics", "/api/status", "/api/operations", "/api/events"]
        for path in paths {
            for headers in [rebound, rebound + bearer] {
                let answer = try await http.get(path, headers: headers)
                #expect(answer.status == 403, "\(path)")
                #expect(!answer.body.contains("report.csv"), "\(path)")
            }
        }
        for path in ["/api/retry", "/api/forget"] {
            #expect(try await http.post(path, json: "{}", headers: rebound + bearer).status == 403, "\(path)")
        }
        #expect(try await AccessTests.stillFailed(gateway))
        // This machine's names, with or without the port, still work.
        for host in ["localhost", "localhost:\(server.port)", "127.0.0.1:\(server.port)", "127.1.2.3", "[::1]:\(server.port)"] {
            #expect(try await http.get("/api/status", headers: [("Host", host)]).status == 200, "\(host)")
        }
        // Another scheme on the same host and port is another origin.
        let https = try await http.post("/api/forget", json: "{}", headers: bearer + [("Origin", "https://127.0.0.1:\(server.port)")])
        #expect(https.status == 403)
        #expect(try await AccessTests.stillFailed(gateway))
        let own = try await http.post("/api/forget", json: "{}", headers: bearer + [("Origin", "http://127.0.0.1:\(server.port)")])
        #expect(own.json as? [String: Int] == ["forgotten": 1])
        try await server.stop()
    }

    @Test func withATokenOnLoopbackChangesNeedIt() async throws {
        let gateway = try await StatusServerTests.gatewayWithAFailure()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway, token: AccessTests.token)
        let http = HTTPCall(base: server.base)
        #expect(try await http.get("/api/status").status == 200, "reading on loopback needs no token")
        #expect(try await http.get("/metrics").status == 200)

        var answer = try await http.post("/api/forget", json: "{}")
        #expect(answer.status == 401)
        #expect(answer.headers.first(name: "www-authenticate")?.hasPrefix("Bearer") == true)
        answer = try await http.post("/api/forget", json: "{}", headers: [("Authorization", "Bearer " + AccessTests.token + "x")])
        #expect(answer.status == 401)
        answer = try await http.post("/api/forget", json: "{}", headers: [("Authorization", "Bearer " + String(AccessTests.token.dropLast()))])
        #expect(answer.status == 401)
        answer = try await http.post("/api/forget", json: "{}", headers: [("Authorization", "Basic " + AccessTests.token)])
        #expect(answer.status == 401)
        // The right token from another site's page is still refused.
        answer = try await http.post("/api/forget", json: "{}", headers: [("Authorization", "Bearer " + AccessTests.token), ("Origin", "http://evil.example")])
        #expect(answer.status == 403)
        #expect(try await AccessTests.stillFailed(gateway))

        answer = try await http.post("/api/forget", json: "{}", headers: [("Authorization", "bearer  " + AccessTests.token)])
        #expect(answer.status == 200)
        #expect(answer.json as? [String: Int] == ["forgotten": 1])

        // The page says that it needs a token, and holds none.
        let page = try await http.get("/")
        #expect(page.status == 200)
        #expect(page.body.contains(#"<meta name="syncgate-token-required" content="true">"#))
        #expect(!page.body.contains(AccessTests.token))
        try await server.stop()
    }

    /// Listening on every address (0.0.0.0, reached here through 127.0.0.1 only): everything but the page's shell
    /// needs the token.
    @Test func awayFromLoopbackEverythingButTheShellNeedsTheToken() async throws {
        let gateway = try await StatusServerTests.gatewayWithAFailure()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway, host: "0.0.0.0", token: AccessTests.token)
        let http = HTTPCall(base: server.base)
        let bearer = [("Authorization", "Bearer " + AccessTests.token)]
        for path in ["/healthz", "/readyz", "/metrics", "/api/status", "/api/operations", "/api/events"] {
            let refused = try await http.get(path)
            #expect(refused.status == 401, "\(path)")
            #expect(!refused.body.contains("report.csv"), "\(path)")
        }
        for path in ["/healthz", "/readyz", "/metrics", "/api/status", "/api/operations"] {
            #expect(try await http.get(path, headers: bearer).status == 200, "\(path)")
        }
        for path in ["/", "/app.js", "/app.css", "/favicon.svg"] {
            let shell = try await http.get(path)
            #expect(shell.status == 200, "\(path)")
            #expect(!shell.body.contains("report.csv") && !shell.body.contains(AccessTests.token), "\(path)")
        }
        #expect(try await http.post("/api/retry", json: "{}").status == 401)
        #expect(try await AccessTests.stillFailed(gateway))
        // Beyond loopback any name may reach the server (a proxy may give another Host): the token decides.
        #expect(try await http.get("/api/status", headers: bearer + [("Host", "gateway.example:\(server.port)")]).status == 200)
        try await server.stop()
    }

    @Test func theTokenIsNeverSentBackShownOrLogged() async throws {
        let gateway = try await StatusServerTests.gatewayWithAFailure()
        defer { gateway.stop() }
        let logs = CapturedLogs()
        let server = try await RunningServer(gateway: gateway, token: AccessTests.token, logger: logs.logger(level: .trace))
        let http = HTTPCall(base: server.base)
        let right = [("Authorization", "Bearer " + AccessTests.token)]
        let wrong = [("Authorization", "Bearer " + AccessTests.token + "-wrong")]
        var answers: [HTTPCall.Answer] = []
        for path in ["/", "/app.js", "/app.css", "/api/status", "/api/operations", "/metrics", "/healthz", "/readyz", "/missing"] {
            answers.append(try await http.get(path))
            answers.append(try await http.get(path, headers: right))
            answers.append(try await http.get(path, headers: wrong))
        }
        answers.append(try await http.post("/api/retry", json: #"{"paths": ["x"]}"#, headers: wrong))
        answers.append(try await http.post("/api/retry", json: "nope", headers: right))
        answers.append(try await http.post("/api/retry", json: #"{"paths": ["nothing"]}"#, headers: right + [("Origin", "http://evil.example")]))
        answers.append(try await http.post("/api/forget", json: #"{"paths": ["nothing"]}"#, headers: right))
        try await gateway.settle()
        try await server.stop()
        #expect(answers.count == 31)
        #expect(answers.contains { $0.status == 401 } && answers.contains { $0.status == 403 } && answers.contains { $0.status == 200 })
        for answer in answers {
            #expect(!answer.body.contains(AccessTests.token))
            #expect(!answer.headers.contains { $0.value.contains(AccessTests.token) })
        }
        let lines = logs.lines
        #expect(lines.contains { $0.contains("refused") }, "the refusals are logged (at debug)")
        #expect(!lines.contains { $0.contains(AccessTests.token) })
    }
}
