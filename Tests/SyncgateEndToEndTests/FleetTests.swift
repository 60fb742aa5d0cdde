import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// Several instances of the real binary share one PostgreSQL ledger (issue 19, part 2): two `syncgate sync` slots
/// and one `syncgate run` send a folder to moto's S3 and a local folder, and one folder of it to a Google Sheets
/// server (one row per file, written by the destination's leader), while instances are killed (`kill -9`) at random
/// moments and started again; the others take the dead one's files once its leases end, and walk its share of the
/// folder. At the end every file is at both destinations byte for byte, no other object is there, the sheet has one
/// row per file of its folder and no duplicate, every row is synced and none is claimed.
/// `SYNCGATE_FLEET_FILES` (default 1500) and `SYNCGATE_FLEET_KILLS` (default 10) raise the sizes
/// (`scripts/fleet-run` runs 20,000 files).
@Suite("fleet: instances share one PostgreSQL ledger through kills", .serialized)
struct FleetTests {
    static var files: Int { Int(ProcessInfo.processInfo.environment["SYNCGATE_FLEET_FILES"] ?? "") ?? 1500 }
    static var kills: Int { Int(ProcessInfo.processInfo.environment["SYNCGATE_FLEET_KILLS"] ?? "") ?? 10 }
    static var enabled: Bool {
        (PostgresTestServer.unavailableReason == nil && S3TestServer.unavailableReason == nil && SheetsTestServer.unavailableReason == nil)
            || TestPaths.serversRequired
    }

    /// One slot of the fleet: what it runs, its process now, and how its last run ended.
    final class Slot {
        let command: [String]
        let name: String
        var process: ChildProcess?
        var starts = 0
        init(_ name: String, _ command: [String]) {
            self.name = name
            self.command = command
        }
    }

    @Test(.enabled(if: FleetTests.enabled, "needs PostgreSQL's server binaries, moto and the Sheets test server"), .timeLimit(.minutes(40)))
    func threeInstancesShareTheFilesThroughKills() async throws {
        let dir = try TemporaryDirectory("sg-e2e-fleet")
        defer { dir.remove() }
        let s3 = try await S3TestServer(buckets: ["fleet"])
        defer { s3.stop() }
        let sheets = try await SheetsTestServer()
        defer { sheets.stop() }
        try await PostgresTestServer.withDatabase { url, server in
            let database = try PostgresStateLocation.parse(url).database
            try dir.write("plugins.yaml", """
                version: 1
                state: "\(url)"
                sources:
                  - name: outbox
                    path: outbox
                destinations:
                  - name: archive
                    type: local
                    path: synced
                  - name: bucket
                    type: s3
                    endpoint: \(s3.endpoint)
                    region: us-east-1
                    bucket: fleet
                    prefix: out/
                    access_key_id: ${TEST_S3_KEY}
                    secret_access_key: ${TEST_S3_SECRET}
                  - name: sheet
                    type: sheets
                    spreadsheet_id: test-spreadsheet
                    range: "Sheet1!A:G"
                    credentials_file: \(sheets.keyFile.path)
                    api_base: \(sheets.baseURL)
                    rows: file
                    writes_per_minute: 6000
                routes:
                  - match: ["**/*"]
                    to: [archive, bucket]
                  - match: ["d0/**"]
                    to: [sheet]
                """)
            var contents: [String: Data] = [:]
            for i in 0..<Self.files {
                var generator = SplitMix(seed: UInt64(i) &+ 91)
                let size = 512 + Int(generator.next() % 6000)
                let data = Data((0..<size).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
                let path = "d\(i % 23)/e\(i % 7)/file-\(i).bin"
                try dir.write("outbox/" + path, data)
                contents[path] = data
            }
            let environment = ["TEST_S3_KEY": s3.accessKeyID, "TEST_S3_SECRET": s3.secretAccessKey, "SYNCGATE_LEASE_SECONDS": "3"]
            let binary = TestPaths.executable("syncgate")
            let slots = [Slot("sync-a", ["sync"]), Slot("sync-b", ["sync"]), Slot("gateway", ["run"])]
            func start(_ slot: Slot) throws {
                slot.starts += 1
                slot.process = try ProcessRunner.start(binary, slot.command, environment: environment, currentDirectory: dir.url,
                                                       logFile: dir.file("\(slot.name)-\(slot.starts).log"))
            }
            for slot in slots { try start(slot) }

            // Kill one running instance at a random moment, start it again; a sync that finished starts again too
            // (it then finds what is left, or nothing).
            var generator = SplitMix(seed: UInt64(Date().timeIntervalSince1970))
            var killed: [String] = []
            // Who holds what, as `status` shows the fleet. A claim is first seen in the ledger (the instances claim
            // files as they plan them); the fleet is then frozen (SIGSTOP) while `status --json` runs, so that what it
            // shows is what the ledger holds at that moment, however fast the instances or slow the machine. (Polling
            // `status` while the fleet ran missed every claim once: each call takes a process start, and the work
            // can be over within a few of them.)
            var holders: Set<String> = []
            var claimedInLedger: Set<String> = []
            // Looks for up to `seconds`. A killed instance's claims stay in the ledger until its lease ends, so the look
            // right after a kill finds claims however fast the others are (looking only before the kills missed them
            // once in a full run).
            func lookAtClaims(for seconds: Double) async throws {
                let deadline = Date().addingTimeInterval(seconds)
                while holders.isEmpty, Date() < deadline {
                    // (An error before the first instance made the schema: no claim yet.)
                    let claimed = (try? await server.psql("SELECT count(*) FROM files WHERE claimed_by IS NOT NULL", database: database)) ?? "0"
                    guard claimed != "0", !claimed.isEmpty else {
                        try await Task.sleep(for: .milliseconds(20))
                        continue
                    }
                    let frozen = slots.compactMap(\.process).filter(\.isRunning)
                    for process in frozen { kill(process.processIdentifier, SIGSTOP) }
                    let status: ProcessResult
                    do {
                        claimedInLedger = Set(try await server.psql(
                            "SELECT DISTINCT claimed_by FROM files WHERE claimed_by IS NOT NULL AND status IN ('pending', 'uploading', 'failed')",
                            database: database).split(separator: "\n").map(String.init))
                        status = try await ProcessRunner.run(binary, ["status", "--json"], environment: environment, currentDirectory: dir.url, timeout: 120)
                    } catch {
                        for process in frozen { kill(process.processIdentifier, SIGCONT) }
                        throw error
                    }
                    for process in frozen { kill(process.processIdentifier, SIGCONT) }
                    #expect(status.status == 0, "status --json: \(status.stderr.suffix(2000))")
                    let report = SyncgateCLI.json(status.stdout) ?? [:]
                    let rows = (report["files"] as? [[String: Any]] ?? []) + (report["ongoing"] as? [[String: Any]] ?? [])
                    holders = Set(rows.compactMap { $0["claimed_by"] as? String })
                    // Claims gone between the count and the freeze (the work was over): nothing to compare; look again.
                    if claimedInLedger.isEmpty { holders = [] } else { return }
                }
            }
            try await lookAtClaims(for: 2)
            while killed.count < Self.kills {
                try await Task.sleep(for: .milliseconds(250 + Int(generator.next() % 1250)))
                let running = slots.filter { $0.process?.isRunning == true }
                if let victim = running.isEmpty ? nil : running[Int(generator.next() % UInt64(running.count))], let process = victim.process {
                    kill(process.processIdentifier, SIGKILL)
                    await ProcessRunner.waitForExit(process)
                    killed.append(victim.name)
                    if holders.isEmpty { try await lookAtClaims(for: 1) }
                }
                for slot in slots where slot.process?.isRunning != true { try start(slot) }
            }

            #expect(!holders.isEmpty, "status --json showed no claimed_by while the ledger held claims: \(claimedInLedger)")
            #expect(holders == claimedInLedger, "status --json showed \(holders); the ledger's claims were \(claimedInLedger)")

            // The syncs run to their end; the gateway works until every row is synced and none is claimed.
            for slot in slots where slot.command == ["sync"] {
                guard let process = slot.process else { continue }
                let ended = await ProcessRunner.waitForExit(process, timeout: max(240, Double(Self.files) / 10))
                #expect(ended, "\(slot.name) did not finish")
                if process.terminationStatus != 0 {
                    // Killed just before the end, or its last run failed: more runs say which. On a loaded machine
                    // (`stress-ng --cpu 4` beside the suite) a run whose lease renewals came late exits 75 (its fence
                    // lapsed: the 3 s lease here is short), as it should; the next run goes on.
                    var again = try await ProcessRunner.run(binary, ["sync"], environment: environment, currentDirectory: dir.url, timeout: max(240, Double(Self.files) / 10))
                    for _ in 0..<5 where again.status == 75 {
                        again = try await ProcessRunner.run(binary, ["sync"], environment: environment, currentDirectory: dir.url, timeout: max(240, Double(Self.files) / 10))
                    }
                    #expect(again.status == 0, "\(slot.name): \(again.stderr.suffix(2000))")
                }
            }
            var left = "?"
            let deadline = Date().addingTimeInterval(180)
            while Date() < deadline {
                left = try await server.psql("SELECT count(*) FROM files WHERE status <> 'synced' OR claimed_by IS NOT NULL", database: database)
                if left == "0" { break }
                try await Task.sleep(for: .milliseconds(500))
            }
            if left != "0" {
                // What a failure needs to be understood (the test's folder, logs included, is removed at its end).
                let stuck = try await server.psql("""
                    SELECT destination, path, status, attempts, claimed_by, last_error, next_retry_at, updated_at FROM files
                    WHERE status <> 'synced' OR claimed_by IS NOT NULL ORDER BY destination, path LIMIT 20
                    """, database: database)
                let instances = try await server.psql("SELECT * FROM instances", database: database)
                print("fleet: rows left:\n\(stuck)\ninstances:\n\(instances)")
                for slot in slots {
                    let log = (try? String(contentsOf: dir.file("\(slot.name)-\(slot.starts).log"), encoding: .utf8)) ?? ""
                    print("fleet: the end of \(slot.name)-\(slot.starts).log:\n\(log.split(separator: "\n").suffix(40).joined(separator: "\n"))")
                }
            }
            let gateway = try #require(slots.last?.process)
            #expect(gateway.isRunning, "the gateway exited on its own (\(gateway.terminationStatus))")
            ProcessRunner.stop(gateway, grace: 30)
            #expect(gateway.terminationStatus == 0, "the gateway's exit")

            #expect(left == "0", "rows not synced or still claimed")
            let sheetPaths = contents.keys.filter { $0.hasPrefix("d0/") }
            #expect(try await server.psql("SELECT count(*) FROM files", database: database) == String(2 * Self.files + sheetPaths.count))
            // The walks were split: an instance walked its share of a view of several (on a quiet machine two or three
            // do; beside `stress-ng --cpu 4` the instances' starts spread out, and once only one did). That nothing
            // of a split walk is lost is what the checks above and below say.
            let splitWalkers = try await server.psql("SELECT count(DISTINCT instance) FROM instance_walks WHERE position(chr(10) in view) > 0", database: database)
            #expect((Int(splitWalkers) ?? 0) >= 1, "instances that walked a share: \(splitWalkers)")
            #expect(killed.count >= Self.kills)

            // Every file at both destinations, byte for byte, and nothing else.
            var problems: [String] = []
            for (path, data) in contents where (try? dir.read("synced/" + path)) != data { problems.append("archive: \(path)") }
            let objects = try await s3.objects(bucket: "fleet", into: dir.file("dump"))
            for (path, data) in contents where objects["out/" + path]?.data != data { problems.append("bucket: \(path)") }
            #expect(objects.count == Self.files, "objects in the bucket")
            let localCount = FileManager.default.enumerator(atPath: dir.file("synced").path)?.allObjects
                .filter { ($0 as? String)?.hasSuffix(".bin") == true }.count
            #expect(localCount == Self.files, "files in the local folder")
            #expect(problems.isEmpty, "\(problems.count) missing or wrong: \(problems.prefix(10))")
            #expect(try await s3.openMultipartUploads(bucket: "fleet") == 0)
            // One sheet row per file of its folder, none twice (the header first).
            var rows = try sheets.textRows()
            #expect(rows.first?.first == "syncgate_row_id", "the sheet's header row: \(rows.first ?? [])")
            if rows.first?.first == "syncgate_row_id" { rows.removeFirst() }
            let names = rows.compactMap { $0.count > 1 ? $0[1] : nil }
            let twice = Dictionary(grouping: names, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
            #expect(twice.isEmpty, "sheet rows written twice: \(twice.prefix(10))")
            #expect(Set(names) == Set(sheetPaths.map { "outbox/" + $0 }) || Set(names) == Set(sheetPaths), "sheet rows: \(names.count) for \(sheetPaths.count) files; e.g. \(names.prefix(3))")
            let putLines = s3.requests("PUT")
            let puts = putLines.count
            // Keys stored more than once (a file sent, and not yet recorded, when its instance was killed; a PUT cut off
            // before it completed is not counted): whole-object PUTs answered 200, by path (the fleet's files are
            // small; a multipart upload's parts are left out).
            var perKey: [Substring: Int] = [:]
            for line in putLines where !line.contains("uploadId=") && line.contains("\" 200 ") {
                guard let start = line.range(of: "\"PUT ")?.upperBound else { continue }
                let path = line[start...].prefix { $0 != " " && $0 != "?" }
                perKey[path, default: 0] += 1
            }
            let resent = perKey.values.filter { $0 > 1 }.count
            print("fleet: \(Self.files) files x 2 destinations, kills \(killed), starts \(slots.map { "\($0.name) \($0.starts)" }), S3 PUTs \(puts), keys stored more than once \(resent) (\(String(format: "%.1f", Double(resent) / Double(max(1, killed.count)))) per kill), instances seen holding files \(holders.count), sheet rows \(names.count), instances that walked a share \(splitWalkers)")
        }
    }
}
