import Foundation
import SyncgateTestSupport
import Testing

/// Issue 16 with the real binary: external plugins (`type: exec`, `type: NAME`) through the JSON-lines protocol of
/// docs/plugins.md: the reference plugins, and test plugins that crash, hang, write garbage, flood, answer wrong
/// ids or start slowly. Whatever a plugin does, its files end pending or failed-retryable, the error names it, and a
/// later run with a working plugin delivers each file once.
@Suite("external plugins (real binary)")
struct ExecPluginTests {
    static let testPlugin = TestPaths.packageRoot.appendingPathComponent("Tests/ExecPlugins/test_plugin.py").path
    static let folderPlugin = TestPaths.packageRoot.appendingPathComponent("examples/plugins/folder/syncgate-destination-folder").path
    static let webhookPlugin = TestPaths.packageRoot.appendingPathComponent("examples/plugins/webhook/syncgate-destination-webhook").path
    static let hasJQ = ProcessRunner.which("jq") != nil

    let dir: TemporaryDirectory
    let cli: SyncgateCLI
    static let files = ["a.txt", "with space.txt", "quote'and\"double.txt", "caf\u{E9}.txt", "deep/er/file.bin", "-dash.txt"]

    init() throws {
        dir = try TemporaryDirectory("sg-exec")
        cli = SyncgateCLI(dir: dir)
        for (index, name) in Self.files.enumerated() { try dir.write("outbox/" + name, "content \(index) of \(name)\n") }
    }

    /// A config whose one destination runs the test plugin with `mode` (nil: behaving).
    func writeConfig(mode: String?, settings: String = "", keys: String = "", extra: String = "", retries: Int = 0) throws {
        let command = [Self.testPlugin] + (mode.map { ["--misbehave", $0] } ?? [])
        let list = command.map { "\"\($0)\"" }.joined(separator: ", ")
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: copies
                type: exec
                command: [\(list)]
                concurrency: 2
                retry: {file: \(retries), base_delay: 10ms, max_delay: 10ms}
                settings: {path: out\(settings)}\(keys.isEmpty ? "" : "\n    " + keys)
            \(extra)
            """)
    }

    func destination() async throws -> [String: Any] {
        let status = try await cli.run(["status", "--json"])
        return try #require((SyncgateCLI.json(status.stdout)?["destinations"] as? [[String: Any]])?.first, "\(status.stdout)")
    }

    func files() async throws -> [[String: Any]] {
        let status = try await cli.run(["status", "--json"])
        return SyncgateCLI.json(status.stdout)?["files"] as? [[String: Any]] ?? []
    }

    /// Every source file is in `out/` with its content.
    func expectDelivered(_ folder: String = "out", sourceLocation: SourceLocation = #_sourceLocation) throws {
        for name in Self.files {
            let copy = try? dir.read("\(folder)/\(name)")
            #expect(copy == (try dir.read("outbox/" + name)), "\(name) not delivered", sourceLocation: sourceLocation)
        }
    }

    /// Nothing was lost: no file failed for good (permanent); every one is synced, pending or failed-retryable.
    func expectNothingLost(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let rows = try await files()
        for row in rows {
            let status = row["status"] as? String ?? ""
            #expect(["synced", "pending", "failed"].contains(status), "\(row)", sourceLocation: sourceLocation)
            if status == "failed" {
                #expect(row["error_class"] as? String == "retryable", "failed for good: \(row)", sourceLocation: sourceLocation)
            }
        }
    }

    /// A behaving plugin afterwards: everything is delivered, and `status` has nothing waiting.
    func expectRecovery(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try writeConfig(mode: nil, retries: 2)
        var result = try await cli.run(["sync"])
        if result.status == 75 { result = try await cli.run(["retry"]) }
        #expect(result.status == 0, "recovery: \(result.stderr.suffix(1500))", sourceLocation: sourceLocation)
        try expectDelivered()
        let line = try await destination()
        #expect(line["synced"] as? Int == Self.files.count && line["failed"] as? Int == 0 && line["pending"] as? Int == 0, "\(line)",
                sourceLocation: sourceLocation)
    }

    // MARK: Working plugins

    @Test func typeExecDeliversListsAndRemovesAndSendsNothingTwice() async throws {
        defer { dir.remove() }
        try writeConfig(mode: nil)
        let first = try await cli.run(["sync", "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        try expectDelivered()
        #expect(SyncgateCLI.events(first.stdout).filter { $0["event"] as? String == "synced" }.count == Self.files.count)
        let second = try await cli.run(["sync", "--json"])
        #expect(second.status == 0)
        #expect(SyncgateCLI.events(second.stdout).filter { $0["event"] as? String == "started" }.isEmpty, "an unchanged file is not sent again")
        let listing = try await cli.run(["ls", "--destination", "copies"])
        #expect(listing.status == 0, "\(listing.stderr)")
        for name in Self.files { #expect(listing.stdout.contains(name), "ls lacks \(name): \(listing.stdout)") }
        let removed = try await cli.run(["rm", "--destination", "copies", "a.txt"])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(!dir.exists("out/a.txt"))
    }

    @Test(.enabled(if: ExecPluginTests.hasJQ, "needs jq"))
    func theFolderReferencePluginFoundByTypeNameInPluginsFolder() async throws {
        defer { dir.remove() }
        try FileManager.default.createDirectory(at: dir.file("plugins"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir.file("plugins/syncgate-destination-folder").path, withDestinationPath: Self.folderPlugin)
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: copies
                type: folder
                settings: {path: out}
            """)
        let validate = try await cli.run(["validate"])
        #expect(validate.status == 0, "\(validate.stderr)")
        let first = try await cli.run(["sync"])
        #expect(first.status == 0, "\(first.stderr)")
        try expectDelivered()
        let listing = try await cli.run(["ls", "--destination", "copies"])
        for name in Self.files { #expect(listing.stdout.contains(name), "ls lacks \(name): \(listing.stdout)") }
    }

    @Test func anUnknownTypeWithoutAProgramIsAConfigError() async throws {
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: copies
                type: nosuchplugin
                settings: {path: out}
            """)
        let result = try await cli.run(["sync"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("plugins.yaml:5:11: destinations[0].type: unknown destination type 'nosuchplugin'"), "\(result.stderr)")
        #expect(result.stderr.contains("syncgate-destination-nosuchplugin"))
    }

    @Test func settingsThePluginRefusesAreLocatedConfigErrorsAndBlockTheDestination() async throws {
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: copies
                type: exec
                command: ["\(Self.testPlugin)"]
                settings:
                  where: out
            """)
        let validate = try await cli.run(["validate"])
        #expect(validate.status == 78, "\(validate.stdout)\(validate.stderr)")
        #expect(validate.stderr.contains("plugins.yaml:8:7: destinations[0].settings.path: missing: where to copy"), "\(validate.stderr)")
        let sync = try await cli.run(["sync"])
        #expect(sync.status == 1, "blocked: \(sync.stderr)")
        let line = try await destination()
        #expect(line["state"] as? String == "blocked", "\(line)")
        #expect((line["last_error"] as? String)?.contains("destinations[0].settings.path: missing: where to copy") == true, "\(line)")
        #expect(line["waiting"] as? Int == Self.files.count)
    }

    @Test func secretsReachThePluginThroughSettingsAndNeverShow() async throws {
        defer { dir.remove() }
        let secret = "tok-\(UUID().uuidString)"
        try writeConfig(mode: nil, settings: ", token: \"${PLUGIN_TOKEN}\"")
        var env = cli
        env.environment["PLUGIN_TOKEN"] = secret
        let result = try await env.run(["sync", "-vv"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("configured for out token=<redacted>"), "the plugin's log is forwarded, redacted: \(result.stderr.prefix(2000))")
        #expect(!result.output.contains(secret))
        // Never in the arguments.
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: copies
                type: exec
                command: ["\(Self.testPlugin)", "--token", "${PLUGIN_TOKEN}"]
                settings: {path: out, token: "${PLUGIN_TOKEN}"}
            """)
        let refused = try await env.run(["validate"])
        #expect(refused.status == 78)
        #expect(refused.stderr.contains("destinations[0].command: argument 2 holds a secret"), "\(refused.stderr)")
        #expect(!refused.output.contains(secret))
    }

    @Test func aSlowStartIsWaitedFor() async throws {
        defer { dir.remove() }
        try writeConfig(mode: "slow-start", extra: "")
        var slow = cli
        slow.environment["PLUGIN_DELAY"] = "2"
        // The plugin gets only the variables of its env: key (and a few like PATH), so PLUGIN_DELAY goes through env:.
        let text = try String(contentsOf: dir.file("plugins.yaml"), encoding: .utf8)
        try dir.write("plugins.yaml", text.replacingOccurrences(of: "    concurrency: 2", with: "    concurrency: 2\n    env: {PLUGIN_DELAY: \"2\"}"))
        let result = try await slow.run(["sync"])
        #expect(result.status == 0, "\(result.stderr)")
        try expectDelivered()
    }

    // MARK: Misbehaving plugins

    /// Runs a sync with the plugin misbehaving (`mode`, on every `every`-th put); checks its error names the plugin
    /// and says `expected`, that nothing is lost, and that a behaving plugin then delivers everything.
    func misbehaving(_ mode: String, every: Int = 2, expected: String, keys: String = "") async throws {
        defer { dir.remove() }
        try writeConfig(mode: mode, settings: ", every: \"\(every)\", state: \"\(dir.file("puts").path)\"", keys: keys)
        let result = try await cli.run(["sync", "--json"], timeout: 90)
        #expect(result.status == 1 || result.status == 75, "\(mode): exit \(result.status): \(result.stderr.suffix(2000))")
        #expect(result.output.contains("plugin 'test_plugin.py'"), "\(mode): the error names the plugin: \(result.output.suffix(2000))")
        #expect(result.output.contains(expected), "\(mode): expected '\(expected)' in \(result.output.suffix(3000))")
        try await expectNothingLost()
        try await expectRecovery()
    }

    @Test func aPluginThatCrashesMidUpload() async throws {
        try await misbehaving("crash-put", expected: "exited (status 3); its last log line: ERROR crashing on purpose")
    }

    @Test func aPluginThatHangsOnAPut() async throws {
        // The put's attempt_timeout cancels it; the plugin ignores the cancel, so after the grace it is killed as hung.
        try await misbehaving("hang-put", expected: "did not end the cancelled put", keys: "attempt_timeout: 2s\n    cancel_grace: 500ms")
    }

    @Test func aPutWithoutAnAnswerFailsNamingThePlugin() async throws {
        try await misbehaving("hang-put", expected: "plugin-timeout: plugin 'test_plugin.py' did not answer put", keys: "attempt_timeout: 2s")
    }

    @Test func aPluginThatStopsReadingItsInput() async throws {
        try await misbehaving("freeze", expected: "did not end the cancelled put", keys: "attempt_timeout: 2s\n    cancel_grace: 500ms")
    }

    @Test func aPluginThatWritesGarbage() async throws {
        try await misbehaving("garbage", expected: "wrote a line that is not JSON: 'this is not json'")
    }

    @Test func aPluginThatWritesALineOver1MiB() async throws {
        try await misbehaving("long-line", expected: "wrote a line over 1 MiB")
    }

    @Test func aPluginThatAnswersAWrongID() async throws {
        try await misbehaving("wrong-id", expected: "which syncgate never sent")
    }

    @Test func aPluginThatFloodsItsLogAndItsOutput() async throws {
        defer { dir.remove() }
        try writeConfig(mode: "flood-log", settings: ", every: \"1\"")
        let logged = try await cli.run(["sync"], timeout: 120)
        #expect(logged.status == 0, "\(logged.stderr.suffix(1000))")
        #expect(logged.stderr.contains("log lines dropped (the plugin logs too much)"), "\(logged.stderr.suffix(1000))")
        let floodLines = logged.stderr.split(separator: "\n").filter { $0.contains("flood line") }.count
        #expect(floodLines <= 100 * 3, "at most 100 lines in 10 s are forwarded: \(floodLines)")
        try expectDelivered()

        try FileManager.default.removeItem(at: dir.file("out"))
        try FileManager.default.removeItem(at: dir.file(".syncgate"))
        try writeConfig(mode: "flood-out", settings: ", every: \"1\"")
        let flooded = try await cli.run(["sync"], timeout: 120)
        #expect(flooded.status == 0, "valid answers are handled as they come: \(flooded.stderr.suffix(1000))")
        #expect((flooded.peakMemoryKiB ?? 0) < 200 * 1024, "memory stays bounded: \(flooded.peakMemoryKiB ?? 0) KiB")
        try expectDelivered()
    }

    @Test func aPluginThatCannotStartMakesTheDestinationUnavailable() async throws {
        defer { dir.remove() }
        try writeConfig(mode: "crash-start")
        let result = try await cli.run(["sync", "--json"])
        #expect(result.status == 75, "\(result.stderr)")
        let line = try await destination()
        #expect(line["state"] as? String == "unavailable", "\(line)")
        #expect((line["last_error"] as? String)?.contains("plugin 'test_plugin.py' exited (status 2)") == true, "\(line)")
        #expect(line["waiting"] as? Int == Self.files.count)
        #expect(line["failed"] as? Int == 0)
        try await expectRecovery()
    }

    @Test func aPluginOfAnotherProtocolVersionIsBlocked() async throws {
        defer { dir.remove() }
        try writeConfig(mode: "old-protocol")
        let result = try await cli.run(["sync"])
        #expect(result.status == 1, "\(result.stderr)")
        let line = try await destination()
        #expect(line["state"] as? String == "blocked", "\(line)")
        #expect((line["last_error"] as? String)?.contains("speaks protocol 99; this syncgate speaks 1") == true, "\(line)")
    }

    /// `syncgate run`: one plugin process serves the gateway's passes; killed, it is started again for the next file,
    /// and SIGTERM ends it with the gateway.
    @Test func theGatewayKeepsItsPluginAndStartsItAgainAfterItDies() async throws {
        defer { dir.remove() }
        try writeConfig(mode: nil, extra: "gateway: {settle: 200ms, rescan_interval: 1s}")
        let gateway = try ProcessRunner.start(SyncgateCLI.binary, ["run", "-v"], currentDirectory: dir.url, logFile: dir.file("gateway.log"))
        func eventually(_ condition: () -> Bool) async -> Bool {
            for _ in 0..<300 where !condition() { try? await Task.sleep(for: .milliseconds(100)) }
            return condition()
        }
        #expect(await eventually { Self.files.allSatisfy { dir.exists("out/" + $0) } }, "the files waiting at start were not sent")
        let plugins = ExecCrashTests.children(of: gateway.processIdentifier)
        #expect(plugins.count == 1, "one plugin process: \(plugins)")
        try dir.write("outbox/later.txt", "later")
        #expect(await eventually { dir.exists("out/later.txt") }, "a file dropped later was not sent")
        #expect(ExecCrashTests.children(of: gateway.processIdentifier) == plugins, "the same plugin served both passes")
        for pid in plugins { kill(pid, SIGKILL) }
        try await Task.sleep(for: .milliseconds(300))
        try dir.write("outbox/after-crash.txt", "after")
        #expect(await eventually { dir.exists("out/after-crash.txt") }, "no plugin was started again: \((try? String(contentsOf: dir.file("gateway.log"), encoding: .utf8)) ?? "")")
        let restarted = ExecCrashTests.children(of: gateway.processIdentifier)
        #expect(restarted.count == 1 && restarted != plugins, "\(restarted)")
        kill(gateway.processIdentifier, SIGTERM)
        #expect(await ProcessRunner.waitForExit(gateway, timeout: 20))
        #expect(gateway.terminationStatus == 0)
        #expect(restarted.allSatisfy { kill($0, 0) != 0 }, "the plugin ended with the gateway")
    }

    // MARK: plugin check

    @Test(.enabled(if: ExecPluginTests.hasJQ, "needs jq"))
    func pluginCheckPassesTheReferencePluginsAndFailsABrokenOne() async throws {
        defer { dir.remove() }
        let folder = try await cli.run(["plugin", "check", "--", Self.folderPlugin], timeout: 120)
        #expect(folder.status == 0, "\(folder.stdout)\(folder.stderr.suffix(2000))")
        #expect(folder.stdout.contains("ok   errors of each class and scope"), "\(folder.stdout)")
        let test = try await cli.run(["plugin", "check", "--", Self.testPlugin], timeout: 120)
        #expect(test.status == 0, "\(test.stdout)\(test.stderr.suffix(2000))")
        let broken = try await cli.run(["plugin", "check", "--", Self.testPlugin, "--misbehave", "garbage"], timeout: 120)
        #expect(broken.status == 1, "\(broken.stdout)")
        #expect(broken.stdout.contains("FAIL put of"), "\(broken.stdout)")
        #expect(broken.stdout.contains("wrote a line that is not JSON"), "\(broken.stdout)")
    }

    @Test func pluginCheckPassesTheWebhookPlugin() async throws {
        defer { dir.remove() }
        let sink = try WebhookSink(dir)
        defer { sink.stop() }
        let result = try await cli.run(["plugin", "check", "--settings", "{\"url\": \"http://127.0.0.1:\(sink.port)/in\"}", "--", Self.webhookPlugin], timeout: 120)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr.suffix(2000))")
    }

    @Test func theWebhookPluginPostsEachFileAndARefusedTokenBlocksIt() async throws {
        defer { dir.remove() }
        let sink = try WebhookSink(dir, token: "right-token-123")
        defer { sink.stop() }
        func config(_ token: String) throws {
            try dir.write("plugins.yaml", """
                version: 1
                sources: [{name: outbox, path: outbox}]
                destinations:
                  - name: hook
                    type: exec
                    command: ["\(Self.webhookPlugin)"]
                    settings: {url: "http://127.0.0.1:\(sink.port)/in", token: "\(token)"}
                """)
        }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: hook
                type: exec
                command: ["\(Self.webhookPlugin)"]
                settings: {url: "ftp://127.0.0.1/in"}
            """)
        let invalid = try await cli.run(["validate"])
        #expect(invalid.status == 78)
        #expect(invalid.stderr.contains("plugins.yaml:7:21: destinations[0].settings.url: must be an http:// or https:// URL"), "\(invalid.stderr)")
        try config("wrong-token-456")
        let refused = try await cli.run(["sync"])
        #expect(refused.status == 1, "\(refused.stderr)")
        var line = try await destination()
        #expect(line["state"] as? String == "blocked", "\(line)")
        #expect(!refused.output.contains("wrong-token-456"))
        try config("right-token-123")
        let sent = try await cli.run(["sync"])
        #expect(sent.status == 0, "\(sent.stderr)")
        line = try await destination()
        #expect(line["synced"] as? Int == Self.files.count, "\(line)")
        try expectDelivered("received")
    }
}

/// A loopback HTTP server that stores each POST's body under its X-Syncgate-Name (refusing a wrong bearer token).
struct WebhookSink {
    let process: ChildProcess
    let port: Int

    init(_ dir: TemporaryDirectory, token: String? = nil) throws {
        let script = try dir.write("sink.py", """
            import http.server, os, sys, urllib.parse
            root, token = sys.argv[1], sys.argv[2]
            class H(http.server.BaseHTTPRequestHandler):
                def do_POST(self):
                    body = self.rfile.read(int(self.headers["Content-Length"]))
                    if token and self.headers.get("Authorization") != "Bearer " + token:
                        self.send_response(401); self.end_headers(); return
                    name = urllib.parse.unquote(self.headers["X-Syncgate-Name"])
                    path = os.path.join(root, name)
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    open(path, "wb").write(body)
                    self.send_response(201); self.send_header("Content-Length", "0"); self.end_headers()
                def log_message(self, *a): pass
            s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
            print(s.server_address[1], flush=True)
            s.serve_forever()
            """)
        let portFile = dir.file("sink.port")
        process = try ProcessRunner.start(URL(fileURLWithPath: "/bin/sh"), ["-c", "exec python3 \"$0\" \"$1\" \"$2\" > \"$3\"", script.path, dir.file("received").path, token ?? "", portFile.path])
        var found: Int?
        for _ in 0..<500 {
            if let text = try? String(contentsOf: portFile, encoding: .utf8), let value = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                found = value
                break
            }
            usleep(10_000)
        }
        port = found ?? 0
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

// MARK: Hostile plugins (issue 26)

extension ExecPluginTests {
    static let hostilePlugin = TestPaths.packageRoot.appendingPathComponent("Tests/ExecPlugins/hostile_plugin.py").path

    /// A config whose destinations run the hostile plugin, each `(name, mode, extra keys)`.
    func writeHostileConfig(_ destinations: [(String, String, String)], settings: String = "") throws {
        var text = "version: 1\nsources: [{name: outbox, path: outbox}]\ndestinations:\n"
        for (name, mode, keys) in destinations {
            text += """
                  - name: \(name)
                    type: exec
                    command: ["\(Self.hostilePlugin)", "\(mode)"]
                    retry: {file: 0}
                    settings: {pidfile: \(dir.file(name + ".pid").path)\(settings)}\(keys.isEmpty ? "" : "\n    " + keys)

                """
        }
        try dir.write("plugins.yaml", text)
    }

    /// Whether the plugin of destination `name` (its pid file) no longer runs, waiting up to `seconds`.
    func pluginEnds(_ name: String, within seconds: Double = 20) async throws -> Bool {
        let pid = try #require(pid_t(try String(contentsOf: dir.file(name + ".pid"), encoding: .utf8)))
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            if kill(pid, 0) != 0 && errno == ESRCH { return true }
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            if let close = stat.lastIndex(of: ")"), stat[stat.index(close, offsetBy: 2)] == "Z" { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// A plugin whose error codes carry its `settings.token` (file- and destination-scoped): the token is in no
    /// output, not in `status --json` (the codes show it redacted) and not in the state file's bytes (database, WAL,
    /// shared memory); the state file is 0600 in a 0700 folder.
    @Test func aSecretEchoedInAPluginErrorCodeIsInNoOutputNorTheStateFile() async throws {
        defer { dir.remove() }
        let token = "plugin-token-\(UUID().uuidString)"
        try writeHostileConfig([("files", "echo-code", ""), ("blocked", "echo-code-destination", "")], settings: ", token: \(token)")
        var outputs: [(String, String)] = []
        var statusJSON = ""
        for arguments in [["sync", "--json", "-vv"], ["sync", "-vv"], ["retry", "--json", "-vv"], ["status"], ["status", "--json"],
                          ["status", "--json", "--all"], ["status", "--failed"]] {
            let result = try await cli.run(arguments)
            outputs.append((arguments.joined(separator: " "), result.stdout + result.stderr))
            if arguments == ["status", "--json"] { statusJSON = result.stdout }
        }
        let status = try #require(SyncgateCLI.json(statusJSON), "\(statusJSON)")
        let rows = try #require(status["files"] as? [[String: Any]])
        let failedRows = rows.filter { $0["destination"] as? String == "files" }
        #expect(failedRows.count == Self.files.count, "\(rows)")
        #expect(failedRows.allSatisfy { $0["error_code"] as? String == "denied-<redacted>" }, "\(failedRows)")
        let blocked = (status["destinations"] as? [[String: Any]])?.first { $0["name"] as? String == "blocked" }
        let blockedState = blocked?["state"] as? String
        let blockedCode = blocked?["error_code"] as? String
        #expect(blockedState == "blocked" && blockedCode == "denied-<redacted>", "\(String(describing: blocked))")

        let folder = dir.file(".syncgate").path
        var files = 0
        for file in ["state.sqlite", "state.sqlite-wal", "state.sqlite-shm"] where dir.exists(".syncgate/" + file) {
            files += 1
            outputs.append((file, String(decoding: try dir.read(".syncgate/" + file), as: UTF8.self)))
            var st = stat()
            #expect(stat(folder + "/" + file, &st) == 0 && st.st_mode & 0o777 == 0o600, "\(file) is 0\(String(st.st_mode & 0o777, radix: 8))")
        }
        #expect(files >= 1)
        var st = stat()
        #expect(stat(folder, &st) == 0 && st.st_mode & 0o777 == 0o700, "the state folder is 0\(String(st.st_mode & 0o777, radix: 8))")
        for (name, text) in outputs {
            #expect(!text.contains(token) && !text.contains(String(token.prefix(20))), "\(name) holds the plugin's token")
        }
    }

    /// A listing whose names are 64 KiB each, without end (cancel ignored): refused at the first name (4 KiB at
    /// most), `ls` ends with an error saying so, and the plugin is killed.
    @Test func aListingOfHugeNamesIsRefusedAndThePluginKilled() async throws {
        defer { dir.remove() }
        try writeHostileConfig([("copies", "huge-names", "cancel_grace: 1s")])
        let result = try await cli.run(["ls", "--destination", "copies"], timeout: 300)
        #expect(result.status != 0)
        #expect(result.stderr.contains("listed a name of 65536 bytes (at most 4096)"), "\(result.stderr.suffix(1000))")
        #expect(try await pluginEnds("copies"), "the plugin is gone")
    }

    /// A listing that never ends (a name every 20 ms, cancel ignored) is stopped at `list_timeout`, for `ls` and
    /// for a plain `sync` of a plugin whose listing is authoritative; the plugin is killed each time.
    @Test func anEndlessListingIsStoppedAtItsDeadline() async throws {
        defer { dir.remove() }
        try writeHostileConfig([("copies", "endless-list", "list_timeout: 2s\n    cancel_grace: 1s")])
        let listing = try await cli.run(["ls", "--destination", "copies"], timeout: 300)
        #expect(listing.status != 0)
        #expect(listing.stderr.contains("did not answer list within"), "\(listing.stderr.suffix(1000))")
        #expect(try await pluginEnds("copies"), "the plugin is gone after ls")

        try writeHostileConfig([("copies", "endless-list-authoritative", "list_timeout: 2s\n    cancel_grace: 1s")])
        try FileManager.default.removeItem(at: dir.file("copies.pid"))
        let sync = try await cli.run(["sync"], timeout: 300)
        #expect(sync.status != 0, "\(sync.output.suffix(1000))")
        #expect(sync.output.contains("did not answer list within"), "\(sync.output.suffix(1000))")
        #expect(try await pluginEnds("copies"), "the plugin is gone after sync")
    }

    /// Names a plugin lists with CR, ESC and BEL are shown escaped by `ls` (a leading CR cannot overwrite the line);
    /// `ls --json` keeps them exactly, JSON-escaped.
    @Test func controlBytesInListedNamesAreEscapedOnTheTerminal() async throws {
        defer { dir.remove() }
        try writeHostileConfig([("copies", "control-names", "")])
        let listing = try await cli.run(["ls", "--destination", "copies"])
        #expect(listing.status == 0, "\(listing.stderr)")
        #expect(listing.stdout.contains("\\rFAKE: all synced") && listing.stdout.contains("bell\\aring.txt") && listing.stdout.contains("esc\\e[31mred.txt"),
                "\(listing.stdout.debugDescription)")
        #expect(!listing.stdout.contains("\r") && !listing.stdout.contains("\u{1B}") && !listing.stdout.contains("\u{07}"), "\(listing.stdout.debugDescription)")
        let json = try await cli.run(["ls", "--destination", "copies", "--json"])
        let names = (SyncgateCLI.json(json.stdout)?["files"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
        #expect(names == ["\rFAKE: all synced", "bell\u{07}ring.txt", "esc\u{1B}[31mred.txt", "plain.txt"], "\(json.stdout)")
    }
}
