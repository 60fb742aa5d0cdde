import Foundation
import SyncgateTestSupport
import Testing

/// Issue 20 item 2: the built `syncgate` binary posts to an Apps Script endpoint that plays the hostile side. It
/// echoes the request body (secret included) in its error answers, in several encodings and placed so that the
/// secret straddles the 300-character cut; it redirects the POST to another origin; it answers with a huge error
/// page. The secret must not appear, in any encoding, in `sync --json`, `status --json`, the `-vv` log or the
/// state file, and must not reach the other origin.
@Suite(
    "syncgate binary against a hostile Apps Script endpoint", .serialized,
    .enabled(if: SheetsTestServer.shouldRun, "needs python3 with cryptography (scripts/test-deps.d/sheets.sh)"))
struct SheetsHostileEndpointTests {
    /// Quotes, a backslash, `/`, `+`, a space and non-ASCII of 2, 3 and 4 UTF-8 bytes, so that its JSON-escaped,
    /// percent-encoded and base64 forms all differ from it. Its ends are markers: any part of it that leaks shows.
    static let secret = "Zq9Kw7\"hostile\\pa ss/wo+rd-ünï-€-😀-Vb3Np"
    let dir: TemporaryDirectory

    init() throws { dir = try TemporaryDirectory("sg-sheets-hostile") }

    func writeConfig(url: String, retry: String = "{ file: 0 }") throws {
        try dir.write("plugins.yaml", """
            version: 1
            state: .syncgate/state.sqlite
            sources:
              - name: outbox
                path: outbox
            destinations:
              - name: tracker
                type: sheets
                apps_script_url: \(url)
                secret: ${HOSTILE_SECRET}
                rows: file
                concurrency: 1
                retry: \(retry)
            routes:
              - match: ["**/*"]
                to: [tracker]
            """)
    }

    func run(_ arguments: [String]) async throws -> ProcessResult {
        try await ProcessRunner.run(
            TestPaths.executable("syncgate"), arguments + ["--config", "plugins.yaml"], environment: ["HOSTILE_SECRET": Self.secret],
            currentDirectory: dir.url, timeout: 180)
    }

    func events(_ result: ProcessResult) -> [[String: Any]] {
        result.stdout.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    /// The forms the secret takes in what the hostile endpoint sends back, computed by Python's encoders (not the
    /// Redactor's): raw, JSON-escaped once and twice (with and without `\u` escapes), percent-encoded, HTML-escaped,
    /// and the base64 and base64url characters that encode it inside each request body echoed; with the first
    /// characters of each (a cut-off leak) and the secret's two ends.
    func needles(bodies: [String]) throws -> [String] {
        let script = """
            import base64, html, json, sys, urllib.parse
            s, bodies = sys.argv[1], json.loads(sys.argv[2])
            inner = json.dumps(s, ensure_ascii=False)[1:-1]  # as it stands in the request body
            forms = [s, json.dumps(s)[1:-1], inner, json.dumps(inner)[1:-1], json.dumps(inner, ensure_ascii=False)[1:-1],
                     json.dumps(s).replace("/", "\\\\/")[1:-1], urllib.parse.quote(s, safe=""), urllib.parse.quote_plus(s),
                     urllib.parse.quote(inner, safe=""), html.escape(s), html.escape(inner)]
            for body in bodies:
                raw = body.encode()
                at = raw.find(inner.encode())
                if at < 0:
                    continue
                end = at + len(inner.encode())
                for encoded in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
                    forms.append(encoded[-(-8 * at // 6):(8 * end) // 6])  # the characters made of the secret's bytes only
            out = ["Zq9Kw7", "Zq9K", "Vb3Np"]
            for form in forms:
                out += [form, form[:10]]
            print(json.dumps(sorted(set(f for f in out if len(f) >= 4))))
            """
        let python = try #require(ProcessRunner.which("python3"))
        let data = try JSONSerialization.data(withJSONObject: bodies)
        let result = try ProcessRunner.runBlocking(python, ["-c", script, Self.secret, String(decoding: data, as: UTF8.self)])
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String])
    }

    /// `sync --json -vv` output, `status --json`, `status -vv` and the raw bytes of the state file and its WAL.
    func outputs(_ runs: [(String, ProcessResult)]) async throws -> [(String, String)] {
        var all = runs.map { ($0.0, $0.1.stdout + $0.1.stderr) }
        all.append(("status --json", try await run(["status", "--json"]).output))
        all.append(("status -vv", try await run(["status", "-vv"]).output))
        for file in [".syncgate/state.sqlite", ".syncgate/state.sqlite-wal"] where dir.exists(file) {
            all.append((file, String(decoding: try dir.read(file), as: UTF8.self)))
        }
        return all
    }

    func expectNoLeak(_ outputs: [(String, String)], _ needles: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        for (name, text) in outputs {
            for needle in needles where text.contains(needle) {
                Issue.record("\(name) holds the secret as \(needle.debugDescription)", sourceLocation: sourceLocation)
            }
        }
    }

    /// The bodies the server received for the web app's URL.
    func postedBodies(_ server: SheetsTestServer) throws -> [String] {
        try server.received().filter { $0["method"] as? String == "POST" }.compactMap { $0["body"] as? String }
    }

    @Test func echoedSecretIsScrubbedInEveryEncoding() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer(appsScriptSecret: Self.secret)
        defer { server.stop() }
        try writeConfig(url: server.appsScriptURL())
        let kinds = ["raw", "json", "base64", "base64url", "percent", "html"]
        for (index, kind) in kinds.enumerated() {
            try dir.write("outbox/echo-\(index).bin", "payload \(index)")
            try server.fault(["kind": "apps_script_answer", "status": 400, "echo": kind, "count": 1])
        }
        let sync = try await run(["sync", "--json", "-vv"])
        #expect(sync.status == 1, "\(sync.stderr.suffix(2000))")
        let failed = events(sync).filter { $0["event"] as? String == "failed" }
        #expect(failed.count == kinds.count)
        let errors = failed.compactMap { $0["error"] as? String }
        // The echoes did reach the messages (so the test tests something): the body around the secret is there,
        // the secret replaced.
        #expect(errors.contains { $0.contains("{\"secret\":\"<redacted>\",\"file\":\"echo-") }, "\(errors)")
        #expect(errors.contains { $0.contains("eyJzZWNyZXQiOi") && $0.contains("<redacted>") }, "\(errors)")  // base64 of {"secret":"
        #expect(errors.contains { $0.contains("%7B%22secret%22%3A%22<redacted>") }, "\(errors)")
        #expect(errors.contains { $0.contains("{&quot;secret&quot;:&quot;<redacted>") }, "\(errors)")
        let bodies = try postedBodies(server)
        #expect(bodies.count == kinds.count)
        let needles = try needles(bodies: bodies)
        #expect(needles.count >= 20)
        // The hostile answers did hold the secret (the needles are right): the raw echo held the body itself.
        #expect(bodies.allSatisfy { body in needles.contains { body.contains($0) } })
        expectNoLeak(try await outputs([("sync --json -vv", sync)]), needles)
    }

    @Test func secretStraddlingTheCutIsScrubbed() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer(appsScriptSecret: Self.secret)
        defer { server.stop() }
        try writeConfig(url: server.appsScriptURL())
        // `{"secret":"` is 11 characters: the 300-character cut falls 4, 10 and 30 characters into the escaped
        // secret; in the base64 echo, 20 characters into its encoding.
        let cuts: [[String: Any]] = [
            ["echo": "raw", "pad": 300 - 11 - 4], ["echo": "raw", "pad": 300 - 11 - 10], ["echo": "raw", "pad": 300 - 11 - 30],
            ["echo": "base64", "pad": 300 - 14 - 20],
        ]
        for (index, cut) in cuts.enumerated() {
            try dir.write("outbox/cut-\(index).bin", "payload \(index)")
            try server.fault(cut.merging(["kind": "apps_script_answer", "status": 400, "count": 1]) { a, _ in a })
        }
        let sync = try await run(["sync", "--json", "-vv"])
        #expect(sync.status == 1, "\(sync.stderr.suffix(2000))")
        let errors = events(sync).filter { $0["event"] as? String == "failed" }.compactMap { $0["error"] as? String }
        #expect(errors.count == cuts.count)
        // Each message was cut (the pad alone nearly fills it) and ends with the mark, never with the secret's start.
        #expect(errors.allSatisfy { $0.hasSuffix("...") && $0.contains("xxxxxxxxxx") }, "\(errors)")
        #expect(errors.filter { $0.hasSuffix("<redacted>...") }.count == 2, "\(errors)")  // the mark kept whole
        expectNoLeak(try await outputs([("sync --json -vv", sync)]), try needles(bodies: try postedBodies(server)))
    }

    @Test func redirectToAnotherOriginGetsNoBodyAndNoSecret() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer(appsScriptSecret: Self.secret)
        defer { server.stop() }
        let elsewhere = try await SheetsTestServer()  // another port: another origin
        defer { elsewhere.stop() }
        try writeConfig(url: server.appsScriptURL())
        try dir.write("outbox/a.bin", "a")
        try dir.write("outbox/b.bin", "b")
        try dir.write("outbox/c.bin", "c")
        // A 307 or a 308 to another origin would take the body (and its secret) there: not followed, and the
        // destination is blocked (its URL is wrong) until its settings change or `syncgate retry`.
        var runs: [(String, ProcessResult)] = []
        for (status, command) in [(307, ["sync", "--json", "-vv"]), (308, ["retry", "--json", "-vv"])] {
            try server.fault(["kind": "apps_script_answer", "status": status, "location": elsewhere.appsScriptURL(), "count": 1])
            let result = try await run(command)
            runs.append(("\(command.first!) (\(status))", result))
            #expect(result.status == 1, "\(status): \(result.stderr.suffix(2000))")
            let waiting = events(result).filter { $0["event"] as? String == "waiting" }
            #expect(!waiting.isEmpty && waiting.allSatisfy { $0["code"] as? String == "redirect-other-origin" }, "\(status): \(waiting)")
            #expect(waiting.contains { ($0["error"] as? String)?.contains("not followed") == true }, "\(waiting)")
            #expect(try elsewhere.received().isEmpty, "\(status): the other origin received a request")
        }
        // A 302 is followed as Google's flow needs: with a GET, without the body.
        try server.fault(["kind": "apps_script_answer", "status": 302, "location": "\(elsewhere.baseURL)/collect?from=302", "count": 1])
        let sync = try await run(["retry", "--json", "-vv"])
        runs.append(("retry (302)", sync))
        let received = try elsewhere.received()
        #expect(received.count == 1, "\(received)")  // the 302's GET, nothing for the 307 and the 308
        for request in received {
            #expect(request["method"] as? String == "GET")
            #expect(request["path"] as? String == "/collect?from=302")
            #expect(request["body"] as? String == "")
            let headers = Dictionary(uniqueKeysWithValues: (request["headers"] as? [String: String] ?? [:]).map { ($0.key.lowercased(), $0.value) })
            #expect(headers["content-type"] == nil && headers["authorization"] == nil, "\(headers)")
            #expect(headers["content-length"] == nil || headers["content-length"] == "0", "\(headers)")
        }
        let seen = String(decoding: try JSONSerialization.data(withJSONObject: received), as: UTF8.self)
        let needles = try needles(bodies: try postedBodies(server))
        #expect(!needles.contains { seen.contains($0) })
        expectNoLeak(try await outputs(runs), needles)
    }

    @Test func googlesOwnRedirectToItsEchoHostStillWorks() async throws {
        defer { dir.remove() }
        // The output is served from another host name (as script.googleusercontent.com is).
        let server = try await SheetsTestServer(appsScriptSecret: Self.secret, echoHost: "localhost")
        defer { server.stop() }
        try writeConfig(url: server.appsScriptURL())
        try dir.write("outbox/a.bin", "a")
        let sync = try await run(["sync", "--json"])
        #expect(sync.status == 0, "\(sync.stdout.suffix(2000))\(sync.stderr.suffix(2000))")
        #expect(try server.rows(spreadsheet: "apps-script-AKfycbTEST").count == 2)  // the header the script wrote, the row
        let echo = try #require(try server.received().first { ($0["path"] as? String)?.hasPrefix("/macros/echo") == true })
        #expect(echo["method"] as? String == "GET")
        #expect(echo["body"] as? String == "")
        let headers = (echo["headers"] as? [String: String] ?? [:]).map { ($0.key.lowercased(), $0.value) }
        #expect(headers.first { $0.0 == "host" }?.1 == "localhost:\(server.port)", "\(headers)")
        #expect(!headers.contains { $0.0 == "content-type" || $0.0 == "authorization" })
    }

    @Test func hugeErrorPageStaysRetryableAndSmall() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer(appsScriptSecret: Self.secret)
        defer { server.stop() }
        try writeConfig(url: server.appsScriptURL(), retry: "{ file: 1, base_delay: 10ms, max_delay: 20ms }")
        try dir.write("outbox/first.bin", "first")
        let baseline = try await run(["sync", "--json"])
        #expect(baseline.status == 0, "\(baseline.stderr.suffix(2000))")
        try dir.write("outbox/huge.bin", "huge")
        try server.fault(["kind": "apps_script_answer", "status": 500, "huge": 256 << 20, "count": 2])
        let huge = try await run(["sync", "--json", "-vv"])
        #expect(huge.status == 75, "\(huge.stderr.suffix(2000))")  // only retryable failures remain
        let failed = try #require(events(huge).first { $0["event"] as? String == "failed" })
        #expect(failed["class"] as? String == "retryable")
        #expect(failed["attempts"] as? Int == 2)
        #expect((failed["error"] as? String)?.contains("Apps Script: HTTP 500: <html><body>overloaded") == true, "\(failed)")
        #expect(((failed["error"] as? String)?.count ?? .max) < 600)
        let base = baseline.peakMemoryKiB ?? 0
        let peak = huge.peakMemoryKiB ?? 0
        print("peak memory: baseline sync \(base) KiB in \(baseline.seconds) s; two 256 MiB error pages \(peak) KiB in \(huge.seconds) s")
        // Reading either page whole would take 256 MiB; a sync peaks at 40-60 MiB here. (Against the baseline's
        // own reading it cannot be compared: sampled every 10 ms, a short run's peak is often read early.)
        #expect(peak < 128 * 1024, "\(peak) KiB (baseline \(base) KiB)")
        #expect(huge.seconds < 30)
        expectNoLeak(try await outputs([("sync --json -vv", huge)]), try needles(bodies: try postedBodies(server)))
    }
}
