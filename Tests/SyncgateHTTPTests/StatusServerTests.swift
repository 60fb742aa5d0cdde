import Foundation
import SyncgateCore
import SyncgateHTTP
import SyncgateTestSupport
import Testing

/// Each endpoint of the status server over real HTTP on loopback, in front of a real engine and ledger.
@Suite("status server endpoints")
struct StatusServerTests {
    /// A gateway whose `archive` got `a.txt` and `b.txt` and failed `report.csv` (a folder stands where the file
    /// goes: a permanent failure of that file).
    static func gatewayWithAFailure(_ prefix: String = "sg-http") async throws -> TestGateway {
        let gateway = try TestGateway(prefix)
        try gateway.dir.write("outbox/a.txt", "alpha")
        try gateway.dir.write("outbox/b.txt", "bravo!")
        try gateway.dir.write("outbox/report.csv", "id,name\n1,x\n")
        try FileManager.default.createDirectory(at: gateway.dir.file("archive/report.csv"), withIntermediateDirectories: true)
        let summary = try await gateway.runPass()
        #expect(summary.uploaded == 2)
        #expect(summary.failedPermanently == 1)
        return gateway
    }

    @Test func healthAndReadiness() async throws {
        let gateway = try TestGateway()
        let server = try await RunningServer(gateway: gateway)
        defer { gateway.stop() }
        let http = HTTPCall(base: server.base)
        let health = try await http.get("/healthz")
        #expect(health.status == 200)
        #expect(health.body == "ok\n")
        #expect(try await http.get("/readyz").status == 200)
        gateway.setReady(false)
        let notReady = try await http.get("/readyz")
        #expect(notReady.status == 503)
        #expect(notReady.body == "not ready\n")
        #expect(try await http.get("/healthz").status == 200, "alive even when not ready")
        gateway.setReady(true)
        #expect(try await http.get("/readyz").status == 200)
        try await server.stop()
    }

    @Test func apiStatusIsTheReportOfStatusJSON() async throws {
        let gateway = try await StatusServerTests.gatewayWithAFailure()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway)
        let answer = try await HTTPCall(base: server.base).get("/api/status")
        #expect(answer.status == 200)
        #expect(answer.headers.first(name: "content-type") == "application/json; charset=utf-8")
        #expect(answer.headers.first(name: "cache-control") == "no-store")
        // Exactly the text `status --json` prints, read a moment apart: only the time it was read differs.
        func withoutTime(_ text: String) -> [Substring] { text.split(separator: "\n").filter { !$0.contains("\"generated_at\"") } }
        #expect(answer.body.hasSuffix("}\n"))
        await #expect(withoutTime(answer.body) == withoutTime(try gateway.statusReport().json))
        #expect(answer.body.contains("\"generated_at\""))
        let served = try #require(answer.json as? [String: Any])
        let archive = try #require((served["destinations"] as? [[String: Any]])?.first)
        #expect(archive["name"] as? String == "archive")
        #expect(archive["synced"] as? Int == 2)
        #expect(archive["failed"] as? Int == 1)
        let files = try #require(served["files"] as? [[String: Any]])
        #expect(files.map { $0["path"] as? String } == ["report.csv"])
        #expect(files.first?["error_code"] as? String == "not-a-file")
        try await server.stop()
    }

    @Test func operationsListWhatTheEngineJustDid() async throws {
        let gateway = try await StatusServerTests.gatewayWithAFailure()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway)
        let answer = try await HTTPCall(base: server.base).get("/api/operations")
        #expect(answer.status == 200)
        let object = try #require(answer.json as? [String: Any])
        #expect((object["ongoing"] as? [Any])?.isEmpty == true)
        let recent = try #require(object["recent"] as? [String: [[String: Any]]])
        #expect(Set(recent["completed"]?.compactMap { $0["path"] as? String } ?? []) == ["a.txt", "b.txt"])
        let failed = try #require(recent["failed"]?.first)
        #expect(failed["path"] as? String == "report.csv")
        #expect(failed["destination"] as? String == "archive")
        #expect((failed["error"] as? String)?.isEmpty == false)
        try await server.stop()
    }

    @Test func retryReattemptsAFailedFileOnceTheFaultIsGone() async throws {
        let gateway = try await StatusServerTests.gatewayWithAFailure()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway)
        let http = HTTPCall(base: server.base)
        // Asked while the folder is still in the way: retried, and failed again.
        var answer = try await http.post("/api/retry", json: #"{"destination": "archive", "paths": ["report.csv"]}"#)
        #expect(answer.status == 200)
        #expect(answer.json as? [String: Int] == ["retried": 1])
        try await gateway.settle()
        await #expect(try gateway.ledger.entries().first { $0.file.path == "report.csv" }?.status == .failed)

        try FileManager.default.removeItem(at: gateway.dir.file("archive/report.csv"))
        answer = try await http.post("/api/retry", json: #"{"paths": ["report.csv"]}"#)
        #expect(answer.json as? [String: Int] == ["retried": 1])
        try await gateway.settle()
        await #expect(try gateway.ledger.entries().allSatisfy { $0.status == .synced })
        #expect(try gateway.dir.read("archive/report.csv") == Data("id,name\n1,x\n".utf8))

        // Nothing failed any more: a retry of everything (an empty body) finds nothing.
        answer = try await http.post("/api/retry")
        #expect(answer.status == 200)
        #expect(answer.json as? [String: Int] == ["retried": 0])
        try await gateway.settle()
        try await server.stop()
    }

    @Test func forgetDropsFailedEntriesOnly() async throws {
        let gateway = try await StatusServerTests.gatewayWithAFailure()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway)
        let http = HTTPCall(base: server.base)
        var answer = try await http.post("/api/forget", json: #"{"destination": "elsewhere"}"#)
        #expect(answer.json as? [String: Int] == ["forgotten": 0])
        answer = try await http.post("/api/forget", json: "{}")
        #expect(answer.status == 200)
        #expect(answer.json as? [String: Int] == ["forgotten": 1])
        let rows = try await gateway.ledger.entries()
        #expect(rows.map(\.file.path).sorted() == ["a.txt", "b.txt"])
        #expect(rows.allSatisfy { $0.status == .synced })
        try await server.stop()
    }

    @Test func malformedChangesAreRefusedAndChangeNothing() async throws {
        let gateway = try await StatusServerTests.gatewayWithAFailure()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway)
        let http = HTTPCall(base: server.base)
        for body in ["not json", #"{"paths": "report.csv"}"#, #"{"destination": 3}"#, #"{"destination": ""}"#, "[1]"] {
            let answer = try await http.post("/api/forget", json: body)
            #expect(answer.status == 400, "\(body)")
            #expect(answer.errorMessage?.contains("destination") == true, "\(body): \(answer.body)")
        }
        let plain = try await http.post("/api/forget", json: "{}", headers: [("Content-Type", "text/plain")])
        #expect(plain.status == 415)
        let get = try await http.get("/api/forget")
        #expect([404, 405].contains(get.status))
        #expect(try await http.get("/nothing-here").status == 404)
        await #expect(try gateway.ledger.entries().filter { $0.status == .failed }.count == 1)
        try await server.stop()
    }

    @Test func theServerStopsWhenItsTaskIsCancelledAndFreesItsPort() async throws {
        let gateway = try TestGateway()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway)
        #expect(Loopback.isListening(port: server.port))
        try await server.stop()
        // On a machine busy with the whole suite, a graceful shutdown may outlast the wait for it (`run` then
        // returns and the listener closes a moment later): the port is free within a generous bound.
        let deadline = ContinuousClock.now + .seconds(60)
        while Loopback.isListening(port: server.port), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
        #expect(!Loopback.isListening(port: server.port))
    }

    @Test func aPortInUseIsAnError() async throws {
        let gateway = try TestGateway()
        defer { gateway.stop() }
        let first = try await RunningServer(gateway: gateway)
        let second = StatusServer(settings: HTTPSettings(host: "127.0.0.1", port: first.port), gateway: gateway, logger: .init(label: "test"))
        await #expect(throws: (any Error).self) { try await second.run() }
        try await first.stop()
    }

    /// IPv6 loopback (`listen: "[::1]:9464"`): the bracketed Host is a loopback name, so a change from the page's
    /// own origin goes through.
    @Test(.enabled(if: FileManager.default.contents(atPath: "/proc/net/if_inet6").map { String(decoding: $0, as: UTF8.self).contains(" lo") } ?? false,
                   "no IPv6 loopback here"))
    func ipv6Loopback() async throws {
        let gateway = try await StatusServerTests.gatewayWithAFailure()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway, host: "::1")
        let http = HTTPCall(base: server.base)
        #expect(try await http.get("/api/status").status == 200)
        let answer = try await http.post("/api/forget", json: "{}", headers: [("Origin", server.base)])
        #expect(answer.json as? [String: Int] == ["forgotten": 1])
        try await server.stop()
    }
}
