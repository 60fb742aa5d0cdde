import Crypto
import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

@testable import SyncgateSheets

/// Issue 14: every Sheets and Apps Script failure carries its scope. The destination is unavailable when it
/// cannot be reached, blocked when it refuses syncgate's credentials or configuration, throttled when it asks for
/// fewer requests; the file's own failures stay the file's. Against the loopback server, over real sockets.
@Suite(
    "Sheets errors by class and scope", .serialized,
    .enabled(if: SheetsTestServer.shouldRun, "needs python3 with cryptography (scripts/test-deps.d/sheets.sh)"))
struct SheetsErrorScopeTests {
    static let unavailable = Classification(.retryable(), scope: .destination)
    static let blocked = Classification(.permanent, scope: .destination)
    static let fileRetryable = Classification(.retryable(), scope: .file)
    static let filePermanent = Classification(.permanent, scope: .file)

    /// `server`'s key file with another `token_uri`.
    func keyFile(from server: SheetsTestServer, tokenURI: String, in dir: TemporaryDirectory) throws -> URL {
        var key = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: server.keyFile)) as? [String: Any])
        key["token_uri"] = tokenURI
        return try dir.write("key-\(UUID().uuidString.prefix(6)).json", try JSONSerialization.data(withJSONObject: key))
    }

    func probeError(_ destination: SheetsDestination) async -> DestinationError? {
        do {
            try await destination.probe()
            Issue.record("the probe succeeded; an error was expected")
            return nil
        } catch let error as DestinationError {
            return error
        } catch {
            Issue.record("unexpected error type: \(error)")
            return nil
        }
    }

    @Test func rejectedOrUnreadableKeyBlocksTheDestination() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-scope")
        defer { dir.remove() }
        try dir.write("a.csv", "x\n1\n")
        let item = try SheetsFixtures.item(dir, "a.csv")
        // The token endpoint refuses the grant: invalid_grant, invalid_client, unauthorized_client.
        for refusal in ["invalid_grant", "invalid_client", "unauthorized_client"] {
            try server.fault(["kind": "token", "status": refusal == "invalid_client" ? 401 : 400, "error": refusal, "message": "refused by the test"])
            let destination = try SheetsFixtures.apiDestination(server, base: dir.url)
            let error = await SheetsFixtures.uploadError(destination, item)
            #expect(error?.classification == Self.blocked, "\(refusal): \(String(describing: error))")
            #expect(error?.code == refusal)
            #expect(error?.message.contains("refused by the test") == true)
            await destination.finish()
        }
        // A key the server does not know (signed by another key): Google's own invalid_grant.
        let other = try await SheetsTestServer()
        defer { other.stop() }
        let forged = try keyFile(from: other, tokenURI: "\(server.baseURL)/token", in: dir)
        let wrongKey = try SheetsFixtures.destination(
            "spreadsheet_id: test-spreadsheet\ncredentials_file: \(forged.path)\napi_base: \(server.baseURL)", base: dir.url)
        let invalid = await probeError(wrongKey)
        #expect(invalid?.classification == Self.blocked)
        #expect(invalid?.message.contains("Invalid JWT Signature.") == true)
        await wrongKey.finish()
        // No key file, a file that is not a key, a key that is not RSA.
        try dir.write("not-a-key.json", "{\"type\": \"service_account\"}")
        try dir.write("bad-pem.json", "{\"type\": \"service_account\", \"client_email\": \"a@b\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nAAAA\\n-----END PRIVATE KEY-----\\n\"}")
        for file in ["missing.json", "not-a-key.json", "bad-pem.json"] {
            let destination = try SheetsFixtures.destination(
                "spreadsheet_id: test-spreadsheet\ncredentials_file: \(dir.file(file).path)\napi_base: \(server.baseURL)", base: dir.url)
            let error = await SheetsFixtures.uploadError(destination, item)
            #expect(error?.classification == Self.blocked, "\(file)")
            #expect(error?.code == "credentials")
            #expect(error?.message.contains(file) == true)
            await destination.finish()
        }
        // 401 even with a fresh token: blocked (after exactly one refresh).
        try server.fault(["kind": "status", "status": 401, "count": 2, "message": "Request had invalid authentication credentials."])
        let refused = try SheetsFixtures.apiDestination(server, base: dir.url)
        let unauthenticated = await SheetsFixtures.uploadError(refused, item)
        #expect(unauthenticated?.classification == Self.blocked)
        #expect(unauthenticated?.code == "UNAUTHENTICATED")
        await refused.finish()
        #expect(try server.stats()["appends"] == 0)
    }

    @Test func nothingListeningMakesTheDestinationUnavailableAtOnce() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-scope")
        defer { dir.remove() }
        try dir.write("a.csv", "x\n1\n")
        let item = try SheetsFixtures.item(dir, "a.csv")
        let closed = Loopback.freePort()
        // The token endpoint unreachable.
        let key = try keyFile(from: server, tokenURI: "http://127.0.0.1:\(closed)/token", in: dir)
        let noToken = try SheetsFixtures.destination(
            "spreadsheet_id: test-spreadsheet\ncredentials_file: \(key.path)\napi_base: \(server.baseURL)", base: dir.url)
        let started = ContinuousClock.now
        let tokenError = await SheetsFixtures.uploadError(noToken, item)
        let tokenTime = ContinuousClock.now - started
        #expect(tokenError?.classification == Self.unavailable)
        #expect(tokenError?.code == "unreachable")
        #expect(tokenError?.message.contains("token exchange: cannot connect to http://127.0.0.1:\(closed)/token") == true)
        // At once, not after the request timeout (60 s): the client does not keep trying to connect.
        #expect(tokenTime < .seconds(20), "\(tokenTime)")
        #expect(await probeError(noToken)?.classification == Self.unavailable)
        await noToken.finish()
        // The API unreachable with a good token endpoint; a host name that does not resolve; a TLS handshake that
        // fails (the server speaks plain HTTP).
        for base in ["http://127.0.0.1:\(closed)", "http://syncgate-test.invalid", "https://127.0.0.1:\(server.port)"] {
            let noAPI = try SheetsFixtures.destination(
                "spreadsheet_id: test-spreadsheet\ncredentials_file: \(server.keyFile.path)\napi_base: \(base)", base: dir.url)
            let apiError = await SheetsFixtures.uploadError(noAPI, item)
            #expect(apiError?.classification == Self.unavailable, "\(base): \(String(describing: apiError))")
            #expect(apiError?.code == "unreachable")
            #expect(await probeError(noAPI)?.classification == Self.unavailable)
            await noAPI.finish()
        }
        // Apps Script: the web app's host unreachable.
        let script = try SheetsFixtures.destination("apps_script_url: http://127.0.0.1:\(closed)/macros/s/X/exec\nsecret: s3cret-value", base: dir.url)
        #expect(await SheetsFixtures.uploadError(script, item)?.classification == Self.unavailable)
        #expect(await probeError(script)?.classification == Self.unavailable)
        await script.finish()
        #expect(try server.stats()["appends"] == 0)
    }

    @Test func resourceExhaustedThrottlesWithItsRetryAfter() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-scope")
        defer { dir.remove() }
        let destination = try SheetsFixtures.apiDestination(server, extra: "rows: file", base: dir.url)
        try dir.write("a.bin", "a")
        let item = try SheetsFixtures.item(dir, "a.bin")
        let throttled = { (seconds: Int) in Classification(.deferred(after: .seconds(seconds)), scope: .destination) }
        // On the key-column read, on the append, at the token endpoint; a 503 with Retry-After too.
        try server.fault(["kind": "status", "status": 429, "count": 1, "retry_after": 11, "method": "GET"])
        let read = await SheetsFixtures.uploadError(destination, item)
        #expect(read?.classification == throttled(11))
        #expect(read?.code == "RESOURCE_EXHAUSTED")
        try server.fault(["kind": "status", "status": 429, "count": 1, "retry_after": 7, "method": "POST",
                          "message": "Quota exceeded for quota metric 'Write requests'"])
        let write = await SheetsFixtures.uploadError(destination, item)
        #expect(write?.classification == throttled(7))
        #expect(write?.message.contains("Quota exceeded") == true)
        try server.fault(["kind": "status", "status": 503, "count": 1, "retry_after": 3, "method": "POST"])
        #expect(await SheetsFixtures.uploadError(destination, item)?.classification == throttled(3))
        // A fresh destination with a state folder of its own (the first one's token is cached in its state folder).
        try FileManager.default.createDirectory(at: dir.file("fresh"), withIntermediateDirectories: true)
        let fresh = try SheetsFixtures.apiDestination(server, extra: "rows: file", base: dir.file("fresh"))
        try server.fault(["kind": "token", "status": 429, "retry_after": 5, "error": "rate_limit_exceeded"])
        #expect(await SheetsFixtures.uploadError(fresh, item)?.classification == throttled(5))
        await fresh.finish()
        // Apps Script answering 429.
        let script = try SheetsFixtures.destination("apps_script_url: \(server.appsScriptURL())\nrows: file", base: dir.url)
        try server.fault(["kind": "apps_script_answer", "status": 429, "retry_after": 9, "message": "too many"])
        #expect(await SheetsFixtures.uploadError(script, item)?.classification == throttled(9))
        await script.finish()
        _ = try await destination.upload(item) { _ in }
        #expect(try server.rows().count == 2)  // the header, the row
        await destination.finish()
    }

    /// The plugin's bookkeeping when a request is throttled and then repeated (as the delivery layer will, in
    /// the same run): no row twice, no row lost, no needless read, no write slot left taken.
    @Test func throttledRequestsRepeatedKeepTheBookkeepingRight() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-scope")
        defer { dir.remove() }
        let destination = try SheetsFixtures.apiDestination(server, extra: "max_rows_per_request: 4", base: dir.url)
        var csv = "n\n"
        for i in 1...10 { csv += "\(i)\n" }
        try dir.write("ten.csv", csv)
        let ten = try SheetsFixtures.item(dir, "ten.csv")
        for i in 0..<4 { try dir.write("f\(i).csv", "n\n\(100 + i)\n") }
        let four = try (0..<4).map { try SheetsFixtures.item(dir, "f\($0).csv") }

        // 429s in a row on the key-column read, four files at once: all four are throttled, nothing is sent;
        // repeated once the quota is back, each goes once.
        try server.fault(["kind": "status", "status": 429, "count": 1000, "retry_after": 1, "method": "GET"])
        for _ in 0..<2 {
            let errors = await withTaskGroup(of: DestinationError?.self) { group in
                for item in four { group.addTask { await SheetsFixtures.uploadError(destination, item) } }
                return await group.reduce(into: [DestinationError?]()) { $0.append($1) }
            }
            #expect(errors.count == 4 && errors.allSatisfy { $0?.failureClass == .deferred(after: .seconds(1)) && $0?.scope == .destination })
        }
        try server.control("POST", "clear-faults")
        for item in four { _ = try await destination.upload(item) { _ in } }
        #expect(try server.textRows().dropFirst().map { $0[1] } == ["100", "101", "102", "103"])
        let afterFour = try server.stats()
        #expect(afterFour["appends"] == 5)  // the header, then one per file

        // The second batch of ten.csv throttled (429: not applied): repeated, the first batch is known, the rest
        // goes; the key column is not read again (nothing became unknown).
        try server.fault(["kind": "status", "status": 429, "count": 1, "skip": 1, "retry_after": 1, "method": "POST"])
        let throttled = await SheetsFixtures.uploadError(destination, ten)
        #expect(throttled?.failureClass == .deferred(after: .seconds(1)))
        #expect(await destination.dedup.hadUnknownOutcome(file: "ten.csv") == false)
        let receipt = try await destination.upload(ten) { _ in }
        #expect(receipt.detail?.hasSuffix("(4 rows already present)") == true)
        #expect(try server.stats()["gets"] == afterFour["gets"])

        // A 503 with Retry-After may follow an applied write: the file is rechecked once; a 429 after that
        // recheck costs no further read.
        try dir.write("more.csv", "n\n" + (20...29).map(String.init).joined(separator: "\n") + "\n")
        let more = try SheetsFixtures.item(dir, "more.csv")
        try server.fault(["kind": "status", "status": 503, "count": 1, "skip": 1, "retry_after": 1, "method": "POST"])
        #expect(await SheetsFixtures.uploadError(destination, more)?.failureClass == .deferred(after: .seconds(1)))
        #expect(await destination.dedup.hadUnknownOutcome(file: "more.csv"))
        let getsBefore = try server.stats()["gets"] ?? 0
        try server.fault(["kind": "status", "status": 429, "count": 1, "skip": 0, "retry_after": 1, "method": "POST"])
        #expect(await SheetsFixtures.uploadError(destination, more)?.failureClass == .deferred(after: .seconds(1)))
        #expect(try server.stats()["gets"] == getsBefore + 1)  // the recheck
        _ = try await destination.upload(more) { _ in }
        #expect(try server.stats()["gets"] == getsBefore + 1)  // no second one
        let values = try server.textRows().dropFirst().map { $0[1] }
        #expect(values.count == 24 && Set(values).count == 24, "\(values)")
        #expect(values.suffix(10) == (20...29).map(String.init))
        // Every write slot taken was given back, the refused ones included.
        #expect(await destination.limiter.inFlight == 0)
        await destination.finish()
    }

    @Test func serverErrorsAreTheFilesToRetryEvenWithAHugeBody() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-scope")
        defer { dir.remove() }
        let destination = try SheetsFixtures.apiDestination(server, extra: "max_rows_per_request: 2", base: dir.url)
        try dir.write("a.csv", "n\n1\n2\n3\n")
        let item = try SheetsFixtures.item(dir, "a.csv")
        try server.fault(["kind": "status", "status": 500, "count": 1, "method": "POST", "message": "Internal error encountered."])
        let plain = await SheetsFixtures.uploadError(destination, item)
        #expect(plain?.classification == Self.fileRetryable)
        #expect(plain?.code == "INTERNAL")
        // 64 MiB of an error page: read up to 64 KiB, still the file's retryable failure, its message short.
        try server.fault(["kind": "status", "status": 502, "count": 1, "method": "POST", "huge": 64 << 20])
        let huge = await SheetsFixtures.uploadError(destination, item)
        #expect(huge?.classification == Self.fileRetryable)
        #expect(huge?.code == "http-502")
        #expect((huge?.message.count ?? .max) < 600)
        _ = try await destination.upload(item) { _ in }
        #expect(try server.textRows().dropFirst().map { $0[1] } == ["1", "2", "3"])
        await destination.finish()
    }

    @Test func redirectsFromTheAPIAreNotFollowedWithTheToken() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let elsewhere = try await SheetsTestServer()
        defer { elsewhere.stop() }
        let dir = try TemporaryDirectory("sheets-scope")
        defer { dir.remove() }
        try dir.write("a.csv", "n\n1\n")
        let destination = try SheetsFixtures.apiDestination(server, base: dir.url)
        for status in [307, 308, 302] {
            try server.fault(["kind": "status", "status": status, "count": 1, "location": "\(elsewhere.baseURL)/v4/spreadsheets/test-spreadsheet/values/Sheet1"])
            let error = await SheetsFixtures.uploadError(destination, try SheetsFixtures.item(dir, "a.csv"))
            #expect(error?.classification == Self.blocked)
            #expect(error?.message.contains("not followed") == true)
        }
        #expect(try elsewhere.received().isEmpty)
        await destination.finish()
    }

    @Test func probeReadsTheSpreadsheetsMetadata() async throws {
        let server = try await SheetsTestServer(forbidden: ["locked"])
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-scope")
        defer { dir.remove() }
        let good = try SheetsFixtures.apiDestination(server, base: dir.url)
        try await good.probe()
        let log = try server.requestLog()
        let read = try #require(log.last)
        #expect(read["methodId"] as? String == "sheets.spreadsheets.get")
        #expect(read["status"] as? Int == 200)
        #expect((read["query"] as? [String: String]) == ["fields": "spreadsheetId"])
        #expect((read["response"] as? [String: String]) == ["spreadsheetId": "test-spreadsheet"])
        #expect(try server.stats()["metadata_reads"] == 1)
        #expect(try server.stats()["appends"] == 0)
        await good.finish()
        for (id, code) in [("missing", "NOT_FOUND"), ("locked", "PERMISSION_DENIED")] {
            let destination = try SheetsFixtures.destination(
                "spreadsheet_id: \(id)\ncredentials_file: \(server.keyFile.path)\napi_base: \(server.baseURL)", base: dir.url)
            let error = await probeError(destination)
            #expect(error?.classification == Self.blocked)
            #expect(error?.code == code)
            #expect(error?.message.hasPrefix("spreadsheets.get \(id): HTTP ") == true)
            await destination.finish()
        }
        // Throttled and server errors come out of the probe as they would out of an upload.
        try server.fault(["kind": "status", "status": 429, "count": 1, "retry_after": 4])
        let busy = try SheetsFixtures.apiDestination(server, base: dir.url)
        #expect(await probeError(busy)?.classification == Classification(.deferred(after: .seconds(4)), scope: .destination))
        await busy.finish()
    }

    @Test func appsScriptProbeChecksTheHostWithoutRunningTheScript() async throws {
        let server = try await SheetsTestServer(appsScriptSecret: "probe-secret-1")
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-scope")
        defer { dir.remove() }
        let destination = try SheetsFixtures.destination("apps_script_url: \(server.appsScriptURL())\nsecret: probe-secret-1", base: dir.url)
        try await destination.probe()
        let received = try server.received()
        #expect(received.count == 1)
        #expect(received.first?["method"] as? String == "HEAD")
        #expect(received.first?["path"] as? String == "/")
        #expect(received.first?["body"] as? String == "")
        #expect(try server.stats()["apps_script_posts"] == 0)
        await destination.finish()
    }

    @Test func fingerprintIsTheDigestOfTheCredentials() async throws {
        let server = try await SheetsTestServer()
        defer { server.stop() }
        let dir = try TemporaryDirectory("sheets-scope")
        defer { dir.remove() }
        let keyData = try Data(contentsOf: server.keyFile)
        let copy = try dir.write("key.json", keyData)
        let destination = try SheetsFixtures.destination(
            "spreadsheet_id: test-spreadsheet\ncredentials_file: \(copy.path)\napi_base: \(server.baseURL)", base: dir.url)
        let first = destination.settingsFingerprint
        #expect(first == SHA256.hash(data: keyData).map { String(format: "%02x", $0) }.joined())
        // The key file replaced (a rotated key): another fingerprint; gone: another again.
        try dir.write("key.json", keyData + Data("\n".utf8))
        #expect(destination.settingsFingerprint != first && destination.settingsFingerprint.count == 64)
        try FileManager.default.removeItem(at: copy)
        #expect(destination.settingsFingerprint == "unreadable")
        let secret = "fingerprint-secret-\(UUID().uuidString)"
        let script = try SheetsFixtures.destination("apps_script_url: \(server.appsScriptURL())\nsecret: \(secret)", base: dir.url)
        #expect(script.settingsFingerprint == SHA256.hash(data: Data(secret.utf8)).map { String(format: "%02x", $0) }.joined())
        #expect(!script.settingsFingerprint.contains(secret))
    }

    @Test func classifyKnowsTheTransportPhases() async throws {
        let closed = Loopback.freePort()
        let transport = HTTPTransport()
        do {
            _ = try await transport.send(method: .GET, url: "http://127.0.0.1:\(closed)/", timeout: .seconds(30))
            Issue.record("a closed port answered")
        } catch let error as TransportError {
            #expect(error.phase == .connect, "\(error)")
            let destination = try SheetsFixtures.destination("apps_script_url: http://127.0.0.1:\(closed)/x", base: URL(fileURLWithPath: "/tmp"))
            #expect(destination.classify(error) == Self.unavailable)
            #expect(destination.classify(WriteOutcomeUnknown(error: .retryable("lost"))) == Self.fileRetryable)
            #expect(destination.classify(DestinationError.blocked("no")) == Self.blocked)
            #expect(destination.classify(TransportError(url: "u", underlying: "reset", phase: .exchange)) == Self.fileRetryable)
        }
        await transport.shutdown()
    }
}
