import Foundation
import SyncgateTestSupport
import Testing

/// Issue 28 with the real binary: `syncgate check` compares what each destination holds with the rows the ledger says
/// are synced. Against each destination a copy is deleted, one replaced with other bytes of the same size, one
/// truncated, and one extra object added: each is found, `--repair` then `sync` restores them byte for byte (nothing is
/// deleted), and a second check, once the extra is removed by hand (`syncgate rm`: extras are only reported), is clean.
@Suite("syncgate check: verify and repair (real binary)")
struct CheckCommandTests {
    static let testPlugin = TestPaths.packageRoot.appendingPathComponent("Tests/ExecPlugins/test_plugin.py").path
    /// Source files: the first four are damaged at the destination, the last stays as it is.
    static let files = ["gone.txt": "deleted at the destination\n", "swapped.txt": "replaced by same-size bytes\n",
                        "sub/short.txt": "truncated at the destination\n", "sub/kept.txt": "left alone\n"]

    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-check")
        cli = SyncgateCLI(dir: dir)
        for (name, text) in Self.files { try dir.write("outbox/" + name, text) }
    }

    func writeConfig(_ destination: String, state: String? = nil) throws {
        try dir.write("plugins.yaml", """
            version: 1
            \(state.map { "state: \($0)" } ?? "")
            sources: [{name: outbox, path: outbox}]
            defaults:
              retry: {file: 0, artwork: 0}
            destinations:
              - \(destination)
            """)
    }

    /// `check --json`'s object for the one destination.
    func checkJSON(_ extra: [String] = [], cli: SyncgateCLI? = nil) async throws -> (status: Int32, object: [String: Any]) {
        let cli = cli ?? self.cli
        let result = try await cli.run(["check", "--json"] + extra)
        let json = try #require(SyncgateCLI.json(result.stdout), "\(result.stdout)\n\(result.stderr)")
        let object = try #require((json["destinations"] as? [[String: Any]])?.first, "\(result.stdout)\n\(result.stderr)")
        return (result.status, object)
    }

    static func findings(_ object: [String: Any]) -> [String: String] {
        var result: [String: String] = [:]
        for finding in object["findings"] as? [[String: Any]] ?? [] {
            if let name = finding["remote_name"] as? String, let kind = finding["kind"] as? String { result[name] = kind }
        }
        return result
    }

    /// The cycle the issue asks for. `damage` damages the destination (names relative to its prefix) and `read`
    /// reads a copy back (nil when absent); `remove` removes a name at the destination. `merged`: the destination
    /// lists in byte order, so the check merges its listing with the ledger page by page.
    func damageCheckRepairSync(prefix: String = "", cli: SyncgateCLI? = nil, merged: Bool = false, damage: () async throws -> Void, read: (String) async throws -> Data?,
                               sameSizeDetectable: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let cli = cli ?? self.cli
        let first = try await cli.run(["sync"])
        #expect(first.status == 0, "\(first.stdout)\n\(first.stderr)", sourceLocation: sourceLocation)
        let clean = try await cli.run(["check"])
        #expect(clean.status == 0, "a fresh sync checks clean: \(clean.stdout)\n\(clean.stderr)", sourceLocation: sourceLocation)
        #expect(clean.stdout.contains("4 checked, 0 missing, 0 different, 0 extra"), "\(clean.stdout)", sourceLocation: sourceLocation)

        try await damage()
        let text = try await cli.run(["check"])
        #expect(text.status == 1, "\(text.stdout)\n\(text.stderr)", sourceLocation: sourceLocation)
        #expect(text.stdout.contains("- \(prefix)gone.txt"), "\(text.stdout)", sourceLocation: sourceLocation)
        #expect(text.stdout.contains("* \(prefix)sub/short.txt"), "\(text.stdout)", sourceLocation: sourceLocation)
        #expect(text.stdout.contains("+ \(prefix)extra.bin"), "\(text.stdout)", sourceLocation: sourceLocation)
        let (status, object) = try await checkJSON(cli: cli)
        #expect(status == 1, sourceLocation: sourceLocation)
        let found = Self.findings(object)
        var expected = ["\(prefix)gone.txt": "missing", "\(prefix)sub/short.txt": "different", "\(prefix)extra.bin": "extra"]
        if sameSizeDetectable { expected["\(prefix)swapped.txt"] = "different" }
        #expect(found == expected, "\(object)", sourceLocation: sourceLocation)
        #expect(object["checked"] as? Int == 4, "\(object)", sourceLocation: sourceLocation)
        #expect(object["repaired"] as? Int == 0, "a check without --repair changes nothing", sourceLocation: sourceLocation)
        #expect(object["listing_merged"] as? Bool == merged, "\(object)", sourceLocation: sourceLocation)

        let repair = try await checkJSON(["--repair"], cli: cli)
        #expect(repair.status == 1, sourceLocation: sourceLocation)
        #expect(repair.object["repaired"] as? Int == expected.count - 1, "\(repair.object)", sourceLocation: sourceLocation)
        #expect(try await read("\(prefix)extra.bin") != nil, "a repair never deletes anything", sourceLocation: sourceLocation)
        let status1 = SyncgateCLI.json(try await cli.run(["status", "--json"]).stdout)
        let line = (status1?["destinations"] as? [[String: Any]])?.first
        #expect(line?["pending"] as? Int == expected.count - 1, "\(String(describing: line))", sourceLocation: sourceLocation)

        let resync = try await cli.run(["sync"])
        #expect(resync.status == 0, "\(resync.stdout)\n\(resync.stderr)", sourceLocation: sourceLocation)
        for (name, text) in Self.files {
            #expect(try await read(prefix + name) == Data(text.utf8), "\(name) restored byte for byte", sourceLocation: sourceLocation)
        }
        let afterSync = try await checkJSON(cli: cli)
        #expect(Self.findings(afterSync.object) == ["\(prefix)extra.bin": "extra"], "\(afterSync.object)", sourceLocation: sourceLocation)

        let rm = try await cli.run(["rm", "--destination", "target", "\(prefix)extra.bin"])
        #expect(rm.status == 0, "\(rm.stdout)\n\(rm.stderr)", sourceLocation: sourceLocation)
        let second = try await cli.run(["check"])
        #expect(second.status == 0, "the second check is clean: \(second.stdout)\n\(second.stderr)", sourceLocation: sourceLocation)
        let statusText = try await cli.run(["status"])
        #expect(statusText.stdout.contains("target: synced (verified just now, 4 checked)"), "\(statusText.stdout)", sourceLocation: sourceLocation)
    }

    // MARK: - Local folder

    @Test func localFolder() async throws {
        defer { dir.remove() }
        try writeConfig("{name: target, type: local, path: synced}")
        try await damageCheckRepairSync(merged: true, damage: {
            try FileManager.default.removeItem(at: dir.file("synced/gone.txt"))
            try dir.write("synced/swapped.txt", String(repeating: "x", count: Self.files["swapped.txt"]!.utf8.count))
            try dir.write("synced/sub/short.txt", "trunc")
            try dir.write("synced/extra.bin", "unknown to the ledger")
        }, read: { try? dir.read("synced/" + $0) })
    }

    @Test func localStatusSaysUnverifiedBeforeTheFirstCheck() async throws {
        defer { dir.remove() }
        try writeConfig("{name: target, type: local, path: synced}")
        #expect(try await cli.run(["sync"]).status == 0)
        let status = try await cli.run(["status"])
        #expect(status.stdout.contains("target: synced, unverified"), "\(status.stdout)")
        let json = SyncgateCLI.json(try await cli.run(["status", "--json"]).stdout)
        let line = (json?["destinations"] as? [[String: Any]])?.first
        #expect(line?["verification"] is NSNull, "\(String(describing: line))")
        #expect(try await cli.run(["check"]).status == 0)
        let after = SyncgateCLI.json(try await cli.run(["status", "--json"]).stdout)
        let verification = ((after?["destinations"] as? [[String: Any]])?.first?["verification"]) as? [String: Any]
        #expect(verification?["checked"] as? Int == 4, "\(String(describing: verification))")
    }

    /// Other bytes of the same size, written with the copy's old modification time: only `--checksum` (reading the
    /// copies) can tell.
    @Test func localChecksumReadsTheCopies() async throws {
        defer { dir.remove() }
        try writeConfig("{name: target, type: local, path: synced}")
        #expect(try await cli.run(["sync"]).status == 0)
        let copy = dir.file("synced/swapped.txt").path
        var before = stat()
        #expect(stat(copy, &before) == 0)
        try dir.write("synced/swapped.txt", String(repeating: "y", count: Self.files["swapped.txt"]!.utf8.count))
        // The copy's modification time put back to the nanosecond: what a tool that keeps times (rsync -t) leaves.
        var times = [before.st_atim, before.st_mtim]
        #expect(utimensat(AT_FDCWD, copy, &times, 0) == 0)
        #expect(try await cli.run(["check"]).status == 0, "size and time match: a listing cannot tell")
        let (status, object) = try await checkJSON(["--checksum"])
        #expect(status == 1)
        #expect(Self.findings(object) == ["swapped.txt": "different"], "\(object)")
    }

    /// A row that is not synced (here failed: a name the local folder refuses) is never reported missing.
    @Test func rowsNotSyncedAreNotMissing() async throws {
        defer { dir.remove() }
        try writeConfig("{name: target, type: local, path: synced}")
        try dir.write("outbox/.syncgate-tmp-refused.txt", "a reserved name")
        let sync = try await cli.run(["sync"])
        #expect(sync.status == 1, "the reserved name fails: \(sync.stdout)\n\(sync.stderr)")
        let (status, object) = try await checkJSON()
        #expect(status == 0, "\(object)")
        #expect(object["checked"] as? Int == 4, "\(object)")
        #expect(Self.findings(object).isEmpty, "\(object)")
    }

    @Test func unknownDestinationIsAUsageError() async throws {
        defer { dir.remove() }
        try writeConfig("{name: target, type: local, path: synced}")
        let result = try await cli.run(["check", "--destination", "nope"])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("no destination named 'nope'"), "\(result.stderr)")
    }

    /// `check:` errors name the file, the line and the key.
    @Test func checkKeysAreValidated() async throws {
        defer { dir.remove() }
        try writeConfig("{name: target, type: local, path: synced, check: {interval: 5s}}")
        let short = try await cli.run(["validate"])
        #expect(short.status == 78, "\(short.stdout)\n\(short.stderr)")
        #expect(short.stderr.contains("plugins.yaml:7:") && short.stderr.contains("check.interval: must be at least 1m"), "\(short.stderr)")
        try writeConfig("{name: target, type: local, path: synced, check: {interval: 1d, repiar: true}}")
        let unknown = try await cli.run(["validate"])
        #expect(unknown.status == 78)
        #expect(unknown.stderr.contains("plugins.yaml:7:") && unknown.stderr.contains("unknown key 'repiar'"), "\(unknown.stderr)")
        try writeConfig("{name: target, type: local, path: synced, check: {interval: off, repair: true}}")
        #expect(try await cli.run(["validate"]).status == 0)
    }

    // MARK: - S3 (moto)

    @Test(.enabled(if: S3TestServer.unavailableReason == nil || TestPaths.serversRequired, "needs moto"))
    func s3() async throws {
        defer { dir.remove() }
        let s3 = try await S3TestServer(buckets: ["check"])
        defer { s3.stop() }
        var cli = self.cli
        cli.environment = ["TEST_S3_KEY": s3.accessKeyID, "TEST_S3_SECRET": s3.secretAccessKey]
        try writeConfig("""
            {name: target, type: s3, endpoint: "\(s3.endpoint)", region: us-east-1, bucket: check, prefix: out-,
                   access_key_id: "${TEST_S3_KEY}", secret_access_key: "${TEST_S3_SECRET}"}
            """)
        func put(_ key: String, _ text: String) async throws {
            let file = try dir.write("put-\(UUID().uuidString)", text)
            try await s3.put(bucket: "check", key: key, file: file)
        }
        func read(_ key: String) async throws -> Data? {
            let objects = try await s3.objects(bucket: "check", into: dir.file("dump-\(UUID().uuidString)"))
            return objects[key]?.data
        }
        // Outside the routed prefix: never reported. (The prefix holds no `/`: moto refuses the signature of a correctly
        // signed ListObjectsV2 whose prefix does, see S3ExistingCheckTests.)
        try await put("elsewhere/not-ours.txt", "another tool's object")
        try await damageCheckRepairSync(prefix: "out-", cli: cli, merged: true, damage: {
            try await s3.delete(bucket: "check", key: "out-gone.txt")
            try await put("out-swapped.txt", String(repeating: "x", count: Self.files["swapped.txt"]!.utf8.count))
            try await put("out-sub/short.txt", "trunc")
            try await put("out-extra.bin", "unknown to the ledger")
        }, read: read)
        let headsBefore = s3.requests("HEAD").count
        let getsBefore = s3.requests("GET").count
        #expect(try await cli.run(["check"]).status == 0)
        #expect(s3.requests("HEAD").count == headsBefore, "check lists; it never sends a HEAD per object")
        #expect(s3.requests("GET").count - getsBefore == 1, "one ListObjectsV2 page for four objects")
        #expect(try await read("elsewhere/not-ours.txt") != nil)
    }

    // MARK: - exec plugin

    @Test func execPlugin() async throws {
        defer { dir.remove() }
        try writeConfig("""
            {name: target, type: exec, command: ["\(Self.testPlugin)"], settings: {path: out, list_sha256: true}}
            """)
        try await damageCheckRepairSync(damage: {
            try FileManager.default.removeItem(at: dir.file("out/gone.txt"))
            try dir.write("out/swapped.txt", String(repeating: "x", count: Self.files["swapped.txt"]!.utf8.count))
            try dir.write("out/sub/short.txt", "trunc")
            try dir.write("out/extra.bin", "unknown to the ledger")
        }, read: { try? dir.read("out/" + $0) })
    }

    // MARK: - Head unit (simulator)

    /// ListFiles names the files and nothing more: a copy deleted and an extra file are found (a copy's bytes cannot be
    /// compared there); `--repair` then `sync` sends the deleted one again.
    @Test(.enabled(if: HeadUnitSimulatorProcess.isAvailable || TestPaths.serversRequired, "syncgate-headunit-sim is not built"))
    func headUnit() async throws {
        defer { dir.remove() }
        let car = try await HeadUnitSimulatorProcess()
        defer { car.cleanUp() }
        try writeConfig("""
            {name: target, type: headunit, host: 127.0.0.1, port: \(car.port), app: {name: "Check Test", id: "584421908"},
                   connect_timeout: 5s, response_timeout: 10s}
            """)
        let first = try await cli.run(["sync"])
        #expect(first.status == 0, "\(first.stdout)\n\(first.stderr)")
        #expect(try await cli.run(["check"]).status == 0)
        try FileManager.default.removeItem(at: car.storage.file("gone.txt"))
        try car.storage.write("extra.bin", "unknown to the ledger")
        let (status, object) = try await checkJSON(["--repair"])
        #expect(status == 1)
        #expect(Self.findings(object) == ["gone.txt": "missing", "extra.bin": "extra"], "\(object)")
        #expect(object["repaired"] as? Int == 1, "\(object)")
        let resync = try await cli.run(["sync"])
        #expect(resync.status == 0, "\(resync.stdout)\n\(resync.stderr)")
        #expect((try? car.storage.read("gone.txt")) == Data(Self.files["gone.txt"]!.utf8))
        #expect(car.storage.exists("extra.bin"), "a repair never deletes anything")
        let again = try await checkJSON()
        #expect(Self.findings(again.object) == ["extra.bin": "extra"], "\(again.object)")
    }

    // MARK: - Sheets (test server)

    /// The `syncgate_row_id` column names the files whose rows are in the sheet: a file whose rows were all deleted is
    /// missing, a row id of a file the ledger does not know is extra; `--repair` then `sync` appends the rows again.
    @Test(.enabled(if: SheetsTestServer.shouldRun, "needs the Sheets test server"))
    func sheets() async throws {
        defer { dir.remove() }
        let server = try await SheetsTestServer()
        defer { server.stop() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: sheetsout, path: sheetsout}]
            destinations:
              - {name: target, type: sheets, spreadsheet_id: test-spreadsheet, credentials_file: "\(server.keyFile.path)",
                 api_base: "\(server.baseURL)", retry: {file: 0}}
              - {name: keyed, type: sheets, spreadsheet_id: test-spreadsheet, range: "Keyed!A:C", credentials_file: "\(server.keyFile.path)",
                 api_base: "\(server.baseURL)", rows: records, columns: [id, v], key: id, retry: {file: 0}}
            """)
        try dir.write("sheetsout/a.csv", "id,v\n1,x\n2,y\n")
        try dir.write("sheetsout/b.csv", "id,v\n3,z\n")
        let first = try await cli.run(["sync"])
        #expect(first.status == 0, "\(first.stdout)\n\(first.stderr)")
        let clean = try await cli.run(["check", "--destination", "target"])
        #expect(clean.status == 0, "\(clean.stdout)\n\(clean.stderr)")
        // A sheet keyed by the records' own key names no files: said, not a failure.
        let keyed = try await cli.run(["check", "--destination", "keyed"])
        #expect(keyed.status == 0 && keyed.stdout.contains("keyed: not checked: cannot be verified"), "\(keyed.stdout)\n\(keyed.stderr)")

        let rows = try server.textRows()
        var kept: [[Any]] = rows.filter { !($0.first ?? "").hasPrefix("a.csv@") }
        #expect(kept.count == rows.count - 2, "\(rows)")
        kept.append(["other.csv@0123456789abcdef#1", "9", "q"])
        try server.setRows(kept)
        let (status, object) = try await checkJSON(["--destination", "target", "--repair"])
        #expect(status == 1)
        #expect(Self.findings(object) == ["a.csv": "missing", "other.csv": "extra"], "\(object)")
        #expect(object["repaired"] as? Int == 1, "\(object)")
        let resync = try await cli.run(["sync"])
        #expect(resync.status == 0, "\(resync.stdout)\n\(resync.stderr)")
        let after = try server.textRows()
        #expect(after.filter { ($0.first ?? "").hasPrefix("a.csv@") }.map { Array($0.dropFirst()) } == [["1", "x"], ["2", "y"]], "\(after)")
        #expect(after.contains { $0.first == "other.csv@0123456789abcdef#1" }, "a repair never deletes anything")
        let again = try await checkJSON(["--destination", "target"])
        #expect(Self.findings(again.object) == ["other.csv": "extra"], "\(again.object)")
    }

    // MARK: - syncgate run: check.interval

    /// A gateway verifies a destination with `check.interval` at once when it was never verified, and with
    /// `repair: true` sends the missing copy again in the pass the repair asks for.
    @Test func gatewayVerifiesOnScheduleAndRepairs() async throws {
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            gateway: { settle: 200ms }
            destinations:
              - {name: target, type: local, path: synced, check: {interval: 1d, repair: true}}
            """)
        #expect(try await cli.run(["sync"]).status == 0)
        try FileManager.default.removeItem(at: dir.file("synced/gone.txt"))
        let gateway = try ProcessRunner.start(SyncgateCLI.binary, ["run", "-v"], currentDirectory: dir.url, logFile: dir.file("gateway.log"))
        defer {
            if gateway.isRunning { kill(gateway.processIdentifier, SIGTERM) }
            gateway.waitUntilExit()
        }
        // The bound only rules out a gateway that never verifies or never sends the copy again (a quiet run: ~2 s).
        let deadline = Date().addingTimeInterval(180)
        while Date() < deadline, (try? dir.read("synced/gone.txt")) != Data(Self.files["gone.txt"]!.utf8) {
            try await Task.sleep(for: .milliseconds(200))
        }
        let log = (try? String(contentsOf: dir.file("gateway.log"), encoding: .utf8)) ?? ""
        #expect((try? dir.read("synced/gone.txt")) == Data(Self.files["gone.txt"]!.utf8), "not restored: \(log.suffix(3000))")
        #expect(log.contains("verified target: 4 checked, 1 missing"), "\(log.suffix(3000))")
        let status = SyncgateCLI.json(try await cli.run(["status", "--json"]).stdout)
        let verification = ((status?["destinations"] as? [[String: Any]])?.first?["verification"]) as? [String: Any]
        #expect(verification?["missing"] as? Int == 1 && verification?["repaired"] as? Int == 1, "\(String(describing: verification))")
    }

    // MARK: - PostgreSQL ledger

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)))
    func localFolderOnAPostgresLedger() async throws {
        defer { dir.remove() }
        try await PostgresTestServer.withDatabase { url, _ in
            try writeConfig("{name: target, type: local, path: synced}", state: "\"\(url)\"")
            try await damageCheckRepairSync(merged: true, damage: {
                try FileManager.default.removeItem(at: dir.file("synced/gone.txt"))
                try dir.write("synced/swapped.txt", String(repeating: "x", count: Self.files["swapped.txt"]!.utf8.count))
                try dir.write("synced/sub/short.txt", "trunc")
                try dir.write("synced/extra.bin", "unknown to the ledger")
            }, read: { try? dir.read("synced/" + $0) })
        }
    }
}
