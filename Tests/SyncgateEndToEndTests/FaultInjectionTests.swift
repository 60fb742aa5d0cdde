import Foundation
import SyncgateTestSupport
import Testing

/// The fault-injecting proxy between syncgate and each network destination's server: refused connections, resets
/// mid-request, stalls, a trickle, connections cut after some bytes, HTTP 500/503/429 with Retry-After. While the
/// fault lasts syncgate retries with its backoff; once it clears every file ends synced with the right bytes or
/// rows. Retry spacing is checked from the `--json` events' timestamps; a permanent error is not retried.
@Suite("fault injection per destination", .enabled(if: AllDestinations.shouldRun, "needs moto, the Sheets test server and the head-unit simulator"))
struct FaultInjectionTests {
    enum Target: String, CaseIterable, Sendable { case s3, sheets, headunit }

    struct Fault: Sendable, CustomStringConvertible {
        var name: String
        var setting: [String: String]
        var httpOnly = false
        var description: String { name }
        func json() -> [String: Any] {
            var object: [String: Any] = [:]
            for (k, v) in setting { object[k] = Int(v) ?? (v as Any) }
            return object
        }
    }

    static let faults: [Fault] = [
        Fault(name: "refuse", setting: ["mode": "refuse"]),
        Fault(name: "reset", setting: ["mode": "reset", "after": "300"]),
        Fault(name: "stall", setting: ["mode": "stall"]),
        Fault(name: "trickle", setting: ["mode": "trickle", "rate": "20000"]),
        Fault(name: "cut", setting: ["mode": "cut", "after": "700"]),
        Fault(name: "http 500", setting: ["mode": "http_error", "status": "500"], httpOnly: true),
        Fault(name: "http 503 retry-after", setting: ["mode": "http_error", "status": "503", "retry_after": "1"], httpOnly: true),
        Fault(name: "http 429 retry-after", setting: ["mode": "http_error", "status": "429", "retry_after": "1"], httpOnly: true),
    ]

    static var cases: [(Target, Fault)] {
        Target.allCases.flatMap { target in faults.filter { !$0.httpOnly || target != .headunit }.map { (target, $0) } }
    }

    /// A workspace with one destination of `target` behind a proxy.
    final class Bench {
        let dir: TemporaryDirectory
        let proxy: FaultProxy
        let target: Target
        var s3: S3TestServer?
        var sheets: SheetsTestServer?
        var sim: HeadUnitSimulatorProcess?
        var files: [String: Data] = [:]
        var keys: [String] = []

        init(_ target: Target) async throws {
            self.target = target
            dir = try TemporaryDirectory("sg-fault")
            let upstream: Int
            var destination: String
            switch target {
            case .s3:
                let server = try await S3TestServer(buckets: ["faults"])
                s3 = server
                upstream = server.port
                destination = """
                    type: s3
                    endpoint: http://127.0.0.1:PROXY
                    region: us-east-1
                    bucket: faults
                    access_key_id: \(server.accessKeyID)
                    secret_access_key: ${S3_SECRET}
                """
            case .sheets:
                let server = try await SheetsTestServer()
                sheets = server
                upstream = server.port
                destination = """
                    type: sheets
                    spreadsheet_id: test-spreadsheet
                    range: "Rows!A:B"
                    credentials_file: \(server.keyFile.path)
                    api_base: http://127.0.0.1:PROXY
                    rows: records
                    columns: [id, value]
                    key: id
                    writes_per_minute: 3000
                    request_timeout: 2s
                """
            case .headunit:
                let server = try await HeadUnitSimulatorProcess()
                sim = server
                upstream = server.port
                destination = """
                    type: headunit
                    host: 127.0.0.1
                    port: PROXY
                    app: { name: "Faults", id: "584421907" }
                    connect_timeout: 1s
                    response_timeout: 2s
                """
            }
            proxy = try await FaultProxy.start(targetPort: upstream)
            destination = destination.replacingOccurrences(of: "PROXY", with: "\(proxy.port)")
            try dir.write("plugins.yaml", """
                version: 1
                state: .syncgate/state.sqlite
                sources: [{name: outbox, path: outbox}]
                destinations:
                  - name: dest
                \(destination)
                    concurrency: 2
                    attempt_timeout: 3s
                    retry: { file: 30, artwork: 30, base_delay: 100ms, max_delay: 800ms, jitter: full }
                """)
            for i in 0..<6 {
                if target == .sheets {
                    let text = "id,value\nk\(i)-a,\(i)\nk\(i)-b,\(i * 2)\n"
                    keys += ["k\(i)-a", "k\(i)-b"]
                    try add("rows-\(i).csv", Data(text.utf8))
                } else {
                    var generator = SplitMix(seed: UInt64(i + 1))
                    try add("file-\(i).bin", Data((0..<(20_000 + i * 7_000)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }))
                }
            }
        }

        func add(_ path: String, _ data: Data) throws {
            try dir.write("outbox/" + path, data)
            files[path] = data
        }

        var environment: [String: String] { ["S3_SECRET": s3?.secretAccessKey ?? ""] }

        func start() throws -> (ChildProcess, URL) {
            let out = dir.file("events.jsonl")
            _ = FileManager.default.createFile(atPath: out.path, contents: nil)
            let process = ChildProcess()
            process.executableURL = TestPaths.executable("syncgate")
            process.arguments = ["sync", "--json"]
            process.currentDirectoryURL = dir.url
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = try FileHandle(forWritingTo: out)
            process.standardError = FileHandle.nullDevice
            try process.run()
            return (process, out)
        }

        func delivered() async throws -> [String] {
            var problems: [String] = []
            switch target {
            case .s3:
                let objects = try await s3!.objects(bucket: "faults", into: dir.file("readback"))
                for (path, data) in files where objects[path]?.data != data { problems.append(path) }
                if try await s3!.openMultipartUploads(bucket: "faults") != 0 { problems.append("orphan multipart uploads") }
            case .sheets:
                var rows = try sheets!.textRows(sheet: "Rows")
                // The header syncgate wrote into the empty sheet, once, first.
                if rows.first == ["id", "value"] { rows.removeFirst() } else if !rows.isEmpty { problems.append("no header row: \(rows[0])") }
                let ids = rows.compactMap(\.first)
                if ids.sorted() != keys.sorted() { problems.append("rows \(ids.sorted()) for \(keys.sorted())") }
            case .headunit:
                for (path, data) in files where (try? sim!.storage.read(path)) != data { problems.append(path) }
            }
            return problems
        }

        func stop() {
            proxy.stop()
            s3?.stop()
            sheets?.stop()
            sim?.cleanUp()
            dir.remove()
        }
    }

    static func events(_ url: URL) -> [[String: Any]] {
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    static func time(_ event: [String: Any]) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return (event["time"] as? String).flatMap { formatter.date(from: $0) }
    }

    @Test(arguments: cases)
    func faultThenRecovery(_ target: Target, _ fault: Fault) async throws {
        let bench = try await Bench(target)
        defer { bench.stop() }
        try bench.proxy.set(fault.json())
        // The fault lasts 2.5 seconds from the moment it first hits syncgate (a faulted connection, or a retry for a
        // refused one), then clears: counted from the start instead, a slow start on a loaded machine could let the
        // fault clear before syncgate ever met it. A fault the destination layer takes for the destination being
        // away (refused, several failures in a row) ends the run with 75 and every file pending; the runs that
        // follow (as a timer would start them) deliver the rest once the fault has cleared.
        var statuses: [Int32] = []
        var events: [[String: Any]] = []
        var hitAt: ContinuousClock.Instant? = nil
        var cleared = false
        for _ in 0..<5 {
            let (process, out) = try bench.start()
            let deadline = ContinuousClock.now + .seconds(120)
            while process.isRunning, ContinuousClock.now < deadline {
                if hitAt == nil {
                    let hit = try bench.proxy.log().contains { ($0["mode"] as? String).map { $0 != "pass" && $0 != "run-ended" } ?? false }
                    if hit || Self.events(out).contains(where: { ["retrying", "waiting"].contains($0["event"] as? String) }) { hitAt = .now }
                }
                if let hitAt, !cleared, ContinuousClock.now - hitAt >= .milliseconds(2500) {
                    try bench.proxy.pass()
                    cleared = true
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            statuses.append(process.terminationStatus)
            events += Self.events(out)
            if process.terminationStatus == 0 { break }
            if !cleared {
                if let hitAt { try await Task.sleep(until: hitAt + .milliseconds(2500)) }
                try bench.proxy.pass()
                cleared = true
            }
        }
        #expect(statuses.last == 0, "\(target) \(fault): exits \(statuses); \(events.filter { $0["event"] as? String == "failed" }.prefix(2))")
        #expect(statuses.allSatisfy { $0 == 0 || $0 == 75 }, "\(target) \(fault): exits \(statuses)")
        let problems = try await bench.delivered()
        #expect(problems.isEmpty, "\(target) \(fault): \(problems.prefix(5))")
        // The destination being away never fails a file: its files wait.
        let failedForTheDestination = events.filter { $0["event"] as? String == "failed" && $0["scope"] as? String == "destination" }
        #expect(failedForTheDestination.isEmpty, "\(target) \(fault): \(failedForTheDestination.prefix(2))")
        let proxied = try bench.proxy.log().filter { ($0["mode"] as? String).map { $0 != "pass" && $0 != "run-ended" } ?? false }
        let retries = events.filter { $0["event"] as? String == "retrying" }
        let waits = events.filter { $0["event"] as? String == "waiting" }
        // A trickle only slows the transfer, and a head unit's stalled connection is met by the session set-up (its
        // listing and space check time out before any upload starts): those need not cost a retry. Every other fault
        // fails attempts that must be retried, or makes the files wait for the destination.
        if fault.name == "trickle" || (target == .headunit && fault.name == "stall") {
            #expect(!proxied.isEmpty || fault.name == "refuse", "\(target) \(fault): the fault never hit a connection")
        } else {
            #expect(!retries.isEmpty || !waits.isEmpty, "\(target) \(fault): the fault hit \(proxied.count) connections but nothing was retried or waited")
        }
        // Retries are spaced by the backoff: never sooner than announced, within the configured bounds
        // (or the server's Retry-After).
        for retry in retries {
            guard let path = retry["path"] as? String, let at = Self.time(retry), let delay = retry["delay_ms"] as? Int else { continue }
            if retry["class"] as? String == "deferred" { continue }
            let minimum = fault.setting["retry_after"] != nil && retry["error"].map({ "\($0)".contains(fault.setting["status"] ?? "-") }) == true ? 1000 : 100
            #expect(delay >= minimum - 1 && (delay <= 800 || delay == 1000), "\(target) \(fault): delay \(delay) ms")
            let next = events.first { e in
                e["event"] as? String == "started" && e["path"] as? String == path && (Self.time(e).map { $0 > at } ?? false)
            }
            if let next, let started = Self.time(next) {
                #expect(started.timeIntervalSince(at) * 1000 >= Double(delay) - 5, "\(target) \(fault): retried \(started.timeIntervalSince(at)) s after announcing \(delay) ms")
            }
        }
        #expect(events.last?["event"] as? String == "summary")
    }

    @Test(arguments: Target.allCases)
    func aPermanentErrorIsNotRetried(_ target: Target) async throws {
        let bench = try await Bench(target)
        defer { bench.stop() }
        switch target {
        case .headunit:
            try bench.add("empty.bin", Data())  // a head unit cannot store a 0-byte file: refused, permanently
        case .s3, .sheets:
            try bench.proxy.set(["mode": "http_error", "status": 403, "count": 1000,
                                 "content_type": target == .s3 ? "application/xml" : "application/json",
                                 "body": target == .s3 ? "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"
                                     : "{\"error\": {\"code\": 403, \"message\": \"The caller does not have permission\", \"status\": \"PERMISSION_DENIED\"}}"])
        }
        let (process, out) = try bench.start()
        await ProcessRunner.waitForExit(process, timeout: 120)
        let events = Self.events(out)
        #expect(process.terminationStatus == 1)
        #expect(!events.contains { $0["event"] as? String == "retrying" })
        if target == .sheets {
            // A 403 from the Sheets API means the sheet is not shared with the service account: the destination
            // is blocked, every file waits for it; nothing is retried, nothing fails.
            let waiting = events.filter { $0["event"] as? String == "waiting" }
            #expect(!waiting.isEmpty)
            #expect(waiting.allSatisfy { $0["class"] as? String == "permanent" && $0["scope"] as? String == "destination" }, "\(waiting.prefix(2))")
            #expect(!events.contains { $0["event"] as? String == "failed" })
        } else {
            let failed = events.filter { $0["event"] as? String == "failed" }
            #expect(!failed.isEmpty)
            #expect(failed.allSatisfy { $0["class"] as? String == "permanent" && $0["attempts"] as? Int ?? 0 <= 1 }, "\(failed.prefix(2))")
        }
    }
}
