import Foundation
import SyncgateTestSupport

/// One workspace syncing the same outbox to every destination type at once: a local folder, S3 (moto with
/// signature checking), a Google Sheets server and a head-unit simulator, all on loopback. Used by the crash,
/// interrupt and secrets tests.
final class AllDestinations {
    let dir: TemporaryDirectory
    let s3: S3TestServer
    let sheets: SheetsTestServer
    let headUnit: HeadUnitSimulatorProcess
    let appsScriptSecret = "apps-script-secret-\(UUID().uuidString.prefix(12))"
    /// Relative path -> content of every file in the outbox.
    private(set) var files: [String: Data] = [:]
    /// Every record key the CSV files hold.
    private(set) var recordKeys: [String] = []

    static var unavailableReason: String? {
        if let reason = S3TestServer.unavailableReason { return reason }
        if let reason = SheetsTestServer.unavailableReason { return reason }
        if !HeadUnitSimulatorProcess.isAvailable { return "syncgate-headunit-sim is not built" }
        return nil
    }

    static var shouldRun: Bool { unavailableReason == nil || TestPaths.serversRequired }

    init(retries: Int = 2) async throws {
        dir = try TemporaryDirectory("sg-all")
        s3 = try await S3TestServer(buckets: ["crash"])
        sheets = try await SheetsTestServer(appsScriptSecret: appsScriptSecret)
        headUnit = try await HeadUnitSimulatorProcess()
        try dir.write("plugins.yaml", """
            version: 1
            state: .syncgate/state.sqlite
            sources: [{name: outbox, path: outbox}]
            defaults:
              concurrency: 4
              retry: { file: \(retries), artwork: \(retries), base_delay: 50ms, max_delay: 200ms }
            destinations:
              - name: archive
                type: local
                path: synced
              - name: bucket
                type: s3
                endpoint: \(s3.endpoint)
                region: us-east-1
                bucket: crash
                prefix: out/
                access_key_id: ${TEST_S3_KEY}
                secret_access_key: ${TEST_S3_SECRET}
              - name: car
                type: headunit
                host: 127.0.0.1
                port: \(headUnit.port)
                app: { name: "Crash Test", id: "584421907" }
                connect_timeout: 2s
                response_timeout: 5s
              - name: sheet
                type: sheets
                spreadsheet_id: test-spreadsheet
                range: "Records!A:B"
                credentials_file: \(sheets.keyFile.path)
                api_base: \(sheets.baseURL)
                rows: records
                columns: [id, value]
                key: id
                writes_per_minute: 3000
              - name: tracker
                type: sheets
                apps_script_url: \(sheets.appsScriptURL())
                secret: ${TEST_APPS_SCRIPT_SECRET}
                rows: file
            routes:
              - match: ["**/*"]
                to: [archive, bucket, car]
              - match: ["**/*.csv"]
                to: [sheet]
              - match: ["reports/**"]
                to: [tracker]
            """)
    }

    var environment: [String: String] {
        ["TEST_S3_KEY": s3.accessKeyID, "TEST_S3_SECRET": s3.secretAccessKey, "TEST_APPS_SCRIPT_SECRET": appsScriptSecret]
    }

    /// Fills the outbox: `binaries` files of 2-40 KiB in folders, `csvs` CSV files of 3 records each, and a few
    /// reports.
    func makeOutbox(binaries: Int, csvs: Int) throws {
        for i in 0..<binaries {
            var generator = SplitMix(seed: UInt64(i) &+ 17)
            let size = 2048 + Int(generator.next() % 38_000)
            let data = Data((0..<size).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
            try add("bin/d\(i % 10)/file-\(i).bin", data)
        }
        for i in 0..<csvs {
            var text = "id,value\n"
            for r in 0..<3 {
                let key = "f\(i)-r\(r)"
                text += "\(key),value \(i * 10 + r)\n"
                recordKeys.append(key)
            }
            try add("records/batch-\(i).csv", Data(text.utf8))
        }
        for i in 0..<5 { try add("reports/report-\(i).txt", Data("report \(i)\n".utf8)) }
    }

    private func add(_ path: String, _ data: Data) throws {
        try dir.write("outbox/" + path, data)
        files[path] = data
    }

    func run(_ arguments: [String], timeout: TimeInterval = 300, overriding: [String: String] = [:]) async throws -> ProcessResult {
        try await ProcessRunner.run(TestPaths.executable("syncgate"), arguments, environment: environment.merging(overriding) { $1 },
                              currentDirectory: dir.url, timeout: timeout)
    }

    func start(_ arguments: [String]) throws -> ChildProcess {
        try ProcessRunner.start(TestPaths.executable("syncgate"), arguments, environment: environment, currentDirectory: dir.url)
    }

    /// Runs `sync` until it exits 0 (at most `runs` times); returns the last result.
    func syncUntilDone(runs: Int = 4) async throws -> ProcessResult {
        var last = try await run(["sync", "--json"])
        var count = 1
        while last.status != 0 && count < runs {
            last = try await run(["sync", "--json"])
            count += 1
        }
        return last
    }

    /// Checks that every destination holds exactly what the outbox holds, once; returns the problems found.
    func verifyDelivered() async throws -> [String] {
        var problems: [String] = []
        for (path, data) in files {
            if (try? dir.read("synced/" + path)) != data { problems.append("local: \(path)") }
            let carName = path.replacingOccurrences(of: "/", with: "_")
            if (try? headUnit.storage.read(carName)) != data { problems.append("head unit: \(carName)") }
        }
        let objects = try await s3.objects(bucket: "crash", into: dir.file("readback"))
        for (path, data) in files where objects["out/" + path]?.data != data { problems.append("s3: \(path)") }
        if objects.count != files.count { problems.append("s3: \(objects.count) objects for \(files.count) files") }
        // The sheet starts with the header syncgate wrote (it was empty), once.
        var rows = try sheets.textRows(sheet: "Records")
        if rows.first == ["id", "value"] { rows.removeFirst() } else { problems.append("sheet: no header row: \(rows.first ?? [])") }
        let keys = rows.compactMap(\.first)
        if keys.sorted() != recordKeys.sorted() {
            let duplicates = Dictionary(grouping: keys, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
            problems.append("sheet: \(keys.count) rows for \(recordKeys.count) records; duplicates: \(duplicates.prefix(5)); missing: \(Set(recordKeys).subtracting(keys).sorted().prefix(5))")
        }
        // Apps Script rows (rows: file): a row id, then the file's name, size, sha256, modified, source, synced at.
        var reportRows = try sheets.textRows(spreadsheet: "apps-script-AKfycbTEST", sheet: "Sheet1")
        if reportRows.first == ["syncgate_row_id", "name", "size", "sha256", "modified", "source", "synced_at"] {
            reportRows.removeFirst()
        } else if !reportRows.isEmpty {
            problems.append("apps script: no header row: \(reportRows.first ?? [])")
        }
        let reportNames = reportRows.compactMap { $0.count > 1 ? $0[1] : nil }
        if reportNames.sorted() != files.keys.filter({ $0.hasPrefix("reports/") }).sorted() {
            problems.append("apps script rows: \(reportRows.prefix(3)) of \(reportRows.count)")
        }
        return problems
    }

    /// The ledger, through `status --json`.
    func status() async throws -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(try await run(["status", "--json"]).stdout.utf8))) as? [String: Any] ?? [:]
    }

    func stop() {
        s3.stop()
        sheets.stop()
        headUnit.cleanUp()
        dir.remove()
    }
}

