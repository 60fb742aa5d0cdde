import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// The built binary with `state: postgres://...` on the PostgreSQL test server, and `syncgate migrate` on both
/// engines.
@Suite("PostgreSQL state end to end (real binary, real server)")
struct PostgresStateTests {
    let dir: TemporaryDirectory
    var cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-e2e-pg")
        cli = SyncgateCLI(dir: dir)
    }

    func writeConfig(state: String) throws {
        try dir.write("plugins.yaml", """
            version: 1
            state: \(state)
            sources:
              - name: outbox
                path: outbox
            destinations:
              - name: archive
                type: local
                path: synced
            """)
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)))
    func syncAndStatusOnAPostgresState() async throws {
        defer { dir.remove() }
        try await PostgresTestServer.withDatabase { url, server in
            let location = try PostgresStateLocation.parse(url)
            // The password from PGPASSWORD, not the URL.
            try writeConfig(state: "\"postgres://\(PostgresTestServer.user)@127.0.0.1:\(location.port)/\(location.database)\"")
            var cli = self.cli
            cli.environment["PGPASSWORD"] = PostgresTestServer.password
            try dir.write("outbox/a.txt", "alpha")
            try dir.write("outbox/b/c.txt", "gamma")
            try dir.write("outbox/Z.txt", "zulu")

            let shown = "postgres://\(PostgresTestServer.user)@127.0.0.1:\(location.port)/\(location.database)"
            var results: [ProcessResult] = []
            let validate = try await cli.run(["validate"])
            results.append(validate)
            #expect(validate.status == 0, "\(validate.stderr)")
            #expect(validate.stdout.contains("state: \(shown)"), "\(validate.stdout)")

            let sync = try await cli.run(["-v", "sync", "--json"])
            results.append(sync)
            #expect(sync.status == 0, "\(sync.stderr)")
            #expect(try dir.read("synced/b/c.txt") == Data("gamma".utf8))
            #expect(try dir.read("synced/Z.txt") == Data("zulu".utf8))
            #expect(!dir.exists(".syncgate/state.sqlite"), "no SQLite file beside the config")

            let status = try await cli.run(["status", "--json"])
            results.append(status)
            #expect(status.status == 0, "\(status.stderr)")
            let report = try #require(SyncgateCLI.json(status.stdout), "\(status.stdout)")
            let destinations = try #require(report["destinations"] as? [[String: Any]], "\(status.stdout)")
            let archive = try #require(destinations.first { $0["name"] as? String == "archive" })
            #expect(archive["synced"] as? Int == 3, "\(archive)")
            #expect(try await server.psql("SELECT count(*) FROM files WHERE status = 'synced'", database: location.database) == "3")

            let again = try await cli.run(["sync", "--json"])
            results.append(again)
            #expect(again.status == 0, "\(again.stderr)")
            let summary = SyncgateCLI.events(again.stdout).last { $0["event"] as? String == "summary" }
            #expect(summary?["uploaded"] as? Int == 0, "\(again.stdout)")

            let migrate = try await cli.run(["migrate"])
            results.append(migrate)
            #expect(migrate.status == 0, "\(migrate.stderr)")
            #expect(migrate.stdout == "\(shown): already at schema \(Ledger.schemaVersion)\n")

            // Several instances share a PostgreSQL state: a sync runs beside a gateway (each file is sent by the
            // one that claims it), and status says a gateway runs.
            let gateway = try cli.start(["run"])
            defer { ProcessRunner.stop(gateway) }
            var state = location
            state.password = Secret(PostgresTestServer.password)
            let deadline = Date().addingTimeInterval(60)
            while !StateLock.gatewayHolds(state: .postgres(state)), gateway.isRunning, Date() < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            try #require(gateway.isRunning, "the gateway exited (\(gateway.terminationStatus))")
            try dir.write("outbox/beside.txt", "beside")
            let beside = try await cli.run(["sync"])
            results.append(beside)
            #expect(beside.status == 0, "\(beside.stderr)")
            #expect(try dir.read("synced/beside.txt") == Data("beside".utf8))
            let statusBeside = try await cli.run(["status", "--json"])
            results.append(statusBeside)
            #expect(SyncgateCLI.json(statusBeside.stdout)?["gateway_running"] as? Bool == true, "\(statusBeside.stdout)")
            ProcessRunner.stop(gateway)
            #expect(gateway.terminationStatus == 0)

            for result in results {
                #expect(!result.output.contains(PostgresTestServer.password), "the password must never be shown: \(result.output)")
            }
        }
    }

    /// PostgreSQL goes down under a running gateway and comes back: the gateway keeps running, files written
    /// meanwhile wait (nothing is sent without its row), and once the server is back they are delivered and
    /// recorded; nothing is lost.
    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)), .timeLimit(.minutes(30)))
    func aGatewayWaitsWhilePostgresIsDown() async throws {
        defer { dir.remove() }
        let server = try await PostgresTestServer()
        defer { server.stop() }
        let database = try await server.createDatabase()
        try writeConfig(state: "\"\(server.url(database: database))\"")
        try dir.write("outbox/before.txt", "before")
        let gateway = try cli.start(["run"])
        defer { ProcessRunner.stop(gateway) }
        func waitFor(_ paths: [String], seconds: Double) async throws -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if paths.allSatisfy({ dir.exists("synced/" + $0) }) { return true }
                try await Task.sleep(for: .milliseconds(100))
            }
            return false
        }
        #expect(try await waitFor(["before.txt"], seconds: 60), "the gateway delivered the first file")

        server.pause()
        for n in 0..<5 { try dir.write("outbox/during/\(n).txt", "written while PostgreSQL was down \(n)") }
        try await Task.sleep(for: .seconds(6))
        #expect(gateway.isRunning, "the gateway must wait for PostgreSQL, not exit (\(gateway.isRunning ? 0 : gateway.terminationStatus))")
        // Nothing is sent that could not be recorded first.
        #expect(!dir.exists("synced/during"), "files were sent while their rows could not be written")

        try await server.resume()
        let during = (0..<5).map { "during/\($0).txt" }
        #expect(try await waitFor(during, seconds: 120), "the files written during the outage were delivered after it")
        for n in 0..<5 { #expect((try? dir.read("synced/during/\(n).txt")) == Data("written while PostgreSQL was down \(n)".utf8)) }
        var synced = ""
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            synced = try await server.psql("SELECT count(*) FROM files WHERE status = 'synced'", database: database)
            if synced == "6" { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(synced == "6", "rows synced in the ledger")
        #expect(gateway.isRunning)
        ProcessRunner.stop(gateway, grace: 30)
        #expect(gateway.terminationStatus == 0)
    }

    /// A config moved from its SQLite state file to PostgreSQL: `migrate --import` copies what the file knows, so
    /// that the first sync on PostgreSQL sends nothing again; the failed row stays failed with its error. A ledger
    /// that already holds rows, the config's own state, and a file that is not there are refused, and nothing is
    /// imported.
    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)))
    func anSQLiteLedgerImportedIntoPostgresSendsNothingAgain() async throws {
        defer { dir.remove() }
        try await PostgresTestServer.withDatabase { url, server in
            let location = try PostgresStateLocation.parse(url)
            try writeConfig(state: ".syncgate/state.sqlite")
            try dir.write("outbox/a.txt", "alpha")
            try dir.write("outbox/b/c.txt", "gamma")
            try dir.write("outbox/x.txt", "clash")
            // A folder where x.txt's copy goes: that file fails for good, the others are delivered.
            try FileManager.default.createDirectory(atPath: dir.file("synced/x.txt").path, withIntermediateDirectories: true)
            let first = try await cli.run(["sync"])
            #expect(first.status == 1, "\(first.stderr)")
            let delivered = try FileManager.default.attributesOfItem(atPath: dir.file("synced/a.txt").path)[.modificationDate] as? Date
            let checked = try await cli.run(["check"])
            #expect(checked.status == 0, "\(checked.stdout)\(checked.stderr)")

            try writeConfig(state: "\"postgres://\(PostgresTestServer.user)@127.0.0.1:\(location.port)/\(location.database)\"")
            var cli = self.cli
            cli.environment["PGPASSWORD"] = PostgresTestServer.password
            let sqlite = dir.file(".syncgate/state.sqlite").path
            let imported = try await cli.run(["migrate", "--import", ".syncgate/state.sqlite"])
            #expect(imported.status == 0, "\(imported.stderr)")
            #expect(imported.stdout.contains("imported from \(sqlite): 3 file rows, 1 destination states, 0 resumable uploads"), "\(imported.stdout)")
            #expect(try await server.psql("SELECT status, count(*) FROM files GROUP BY status ORDER BY status", database: location.database) == "failed|1\nsynced|2")
            #expect(imported.stdout.contains("0 deletion records, 1 verifications"), "\(imported.stdout)")
            #expect(try await server.psql("SELECT count(*) FROM files WHERE claimed_by IS NOT NULL", database: location.database) == "0")

            let report = try await cli.run(["status"])
            #expect(report.stdout.contains("archive: synced (verified"), "the verification came along: \(report.stdout)")
            let status = try await cli.run(["status", "--json", "x.txt"])
            let rows = try #require(SyncgateCLI.json(status.stdout)?["files"] as? [[String: Any]], "\(status.stdout)")
            #expect(rows.first?["status"] as? String == "failed", "\(rows)")
            #expect((rows.first?["last_error"] as? String)?.contains("is a folder") == true, "\(rows)")

            let sync = try await cli.run(["sync", "--json"])
            let events = SyncgateCLI.events(sync.stdout)
            let started = events.filter { $0["event"] as? String == "started" }.compactMap { $0["path"] as? String }
            #expect(!started.contains("a.txt") && !started.contains("b/c.txt"), "delivered files are not sent again: \(sync.stdout)")
            let summary = events.last { $0["event"] as? String == "summary" }
            #expect(summary?["uploaded"] as? Int == 0, "\(sync.stdout)")
            #expect(try FileManager.default.attributesOfItem(atPath: dir.file("synced/a.txt").path)[.modificationDate] as? Date == delivered)

            // Once a run has written to it, a ledger takes no import: nothing is added or changed.
            let again = try await cli.run(["migrate", "--import", sqlite])
            #expect(again.status == 78, "\(again.stderr)")
            #expect(again.stderr.contains("already holds 3 file rows"), "\(again.stderr)")
            #expect(again.stderr.contains("nothing was imported"), "\(again.stderr)")
            #expect(try await server.psql("SELECT count(*) FROM files", database: location.database) == "3")
            let missing = try await cli.run(["migrate", "--import", "nosuch.sqlite"])
            #expect(missing.status == 64, "\(missing.stderr)")
            #expect(missing.stderr.contains("--import nosuch.sqlite: no such state file"), "\(missing.stderr)")
            #expect(!dir.exists("nosuch.sqlite"), "a missing file is not created")
            try writeConfig(state: ".syncgate/state.sqlite")
            let own = try await self.cli.run(["migrate", "--import", ".syncgate/state.sqlite"])
            #expect(own.status == 64, "\(own.stderr)")
        }
    }

    /// A PostgreSQL server that is not there is a reason to try again later (exit 75), not a broken config; its
    /// password is not printed.
    @Test func anUnreachableServerExits75() async throws {
        defer { dir.remove() }
        let port = Loopback.freePort()
        try writeConfig(state: "\"postgres://syncgate:unreachable-pw-9@127.0.0.1:\(port)/ledger\"")
        try dir.write("outbox/a.txt", "alpha")
        for command in [["sync"], ["status"], ["migrate"], ["run"]] {
            let result = try await cli.run(command)
            #expect(result.status == 75, "\(command): \(result.stderr)")
            #expect(result.stderr.contains("state database postgres://syncgate@127.0.0.1:\(port)/ledger: cannot reach PostgreSQL at 127.0.0.1:\(port)"),
                    "\(command): \(result.stderr)")
            #expect(!result.output.contains("unreachable-pw-9"), "\(command): \(result.output)")
        }
        #expect(!dir.exists("synced/a.txt"))
    }

    /// `syncgate migrate` creates, finds current, upgrades, and refuses a newer schema (exit 78), on both engines.
    @Test(arguments: PostgresTestServer.enabled ? ["sqlite", "postgres"] : ["sqlite"])
    func migrateCreatesUpgradesAndRefusesNewer(engine: String) async throws {
        defer { dir.remove() }
        func check(state: String, shown: String, sql: @escaping (String) async throws -> Void) async throws {
            try writeConfig(state: state)
            var result = try await cli.run(["migrate"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == "\(shown): created schema 9\n")
            result = try await cli.run(["migrate"])
            #expect(result.stdout == "\(shown): already at schema 9\n")
            try await sql("DROP INDEX files_claimed; ALTER TABLE files DROP COLUMN claimed_by; ALTER TABLE files DROP COLUMN lease_until; DROP TABLE instances; DROP TABLE instance_walks; ALTER TABLE destinations DROP COLUMN retry_after_until; DROP TABLE source_roots; DROP TABLE remote_deletions; DROP TABLE destination_leaders; DROP TABLE verifications; DROP TABLE destination_targets; UPDATE syncgate_meta SET value = '4' WHERE key = 'schema';")
            result = try await cli.run(["migrate"])
            #expect(result.stdout == "\(shown): upgraded schema 4 to 9\n", "\(result.stderr)")
            try await sql("UPDATE syncgate_meta SET value = '10' WHERE key = 'schema';")
            result = try await cli.run(["migrate"])
            #expect(result.status == 78)
            #expect(result.stderr.contains("was written by a newer syncgate (schema 10, this one reads up to 9); upgrade syncgate"), "\(result.stderr)")
            result = try await cli.run(["sync"])
            #expect(result.status == 78, "every command refuses it: \(result.stderr)")
        }
        if engine == "sqlite" {
            let path = dir.file("state/ledger.sqlite").path
            try await check(state: "state/ledger.sqlite", shown: path) { sql in
                let result = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/sqlite3"), [path, sql])
                try #require(result.status == 0, "\(result.stderr)")
            }
            return
        }
        try await PostgresTestServer.withDatabase { url, server in
            let location = try PostgresStateLocation.parse(url)
            try await check(state: "\"\(url)\"", shown: location.displayName) { sql in
                try await server.psql(sql, database: location.database)
            }
        }
    }
}
