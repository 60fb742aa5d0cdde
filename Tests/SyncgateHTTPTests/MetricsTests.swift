import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// `/metrics` read by Prometheus's own Python client (its text parser), after a real pass: the ledger's gauges,
/// the gateway's figures and the delivery counters of swift-metrics, each family typed and described.
@Suite("metrics")
struct MetricsTests {
    typealias Family = PrometheusText.Family

    /// Parses the text with prometheus_client (``PrometheusText``).
    static func parse(_ text: String) async throws -> [String: Family] {
        try await PrometheusText.parse(text)
    }

    @Test func aPassShowsInEveryFamilyAndPrometheusParsesIt() async throws {
        // Counters live as long as the process (swift-metrics is bootstrapped once): names of this test's own.
        let name = "m-" + UUID().uuidString.prefix(8).lowercased()
        let vault = name + "-vault"
        let gateway = try TestGateway(destinations: [
            "{name: \(name), type: local, path: archive}", "{name: \(vault), type: local, path: vault-file}",
        ])
        defer { gateway.stop() }
        // The server first: it bootstraps swift-metrics before the engine makes its counters.
        let server = try await RunningServer(gateway: gateway)
        try gateway.dir.write("vault-file", "a file where the vault's folder should be")
        try gateway.dir.write("outbox/a.txt", "alpha")
        try gateway.dir.write("outbox/b.txt", "bravo!")
        try gateway.dir.write("outbox/report.csv", "id\n1\n")
        try FileManager.default.createDirectory(at: gateway.dir.file("archive/report.csv"), withIntermediateDirectories: true)
        try await gateway.runPass()
        // The archive verified against the ledger (as `syncgate check` does); the vault never.
        let archive = try #require(gateway.config.destination(named: name))
        _ = try await Verifier(name: name, destination: archive.destination, ledger: gateway.ledger).run()

        let answer = try await HTTPCall(base: server.base).get("/metrics")
        #expect(answer.status == 200)
        #expect(answer.headers.first(name: "content-type") == "text/plain; version=0.0.4; charset=utf-8")
        let families = try await MetricsTests.parse(answer.body)
        for family in families.values where family.name.hasPrefix("syncgate_") {
            #expect(!family.help.isEmpty, "\(family.name) has no HELP")
        }
        func family(_ name: String, _ type: String) throws -> Family {
            let found = try #require(families[name], "no family \(name) in \(families.keys.sorted())")
            #expect(found.type == type, "\(name)")
            return found
        }

        // From the ledger, at scrape time.
        let files = try family("syncgate_files", "gauge")
        #expect(files.value(["destination": name, "status": "synced"]) == 2)
        #expect(files.value(["destination": name, "status": "failed"]) == 1)
        #expect(files.value(["destination": name, "status": "pending"]) == 0)
        #expect(files.value(["destination": vault, "status": "synced"]) == 0)
        let up = try family("syncgate_destination_up", "gauge")
        #expect(up.value(["destination": name, "type": "local"]) == 1)
        #expect(up.value(["destination": vault, "type": "local"]) == 0)
        let state = try family("syncgate_destination_state", "gauge")
        #expect(state.value(["destination": vault, "state": "blocked"]) == 1)
        #expect(state.value(["destination": vault, "state": "available"]) == 0)
        #expect(try family("syncgate_destination_waiting_files", "gauge").value(["destination": vault]) == 3)
        let lastSuccess = try #require(try family("syncgate_last_success_timestamp_seconds", "gauge").value(["destination": name]))
        #expect(abs(lastSuccess - Date().timeIntervalSince1970) < 3600)
        #expect(try family("syncgate_last_success_timestamp_seconds", "gauge").value(["destination": vault]) == 0)

        let verified = try #require(try family("syncgate_verification_timestamp_seconds", "gauge").value(["destination": name]))
        #expect(abs(verified - Date().timeIntervalSince1970) < 3600)
        #expect(try family("syncgate_verification_timestamp_seconds", "gauge").value(["destination": vault]) == 0)
        #expect(try family("syncgate_verification_checked_files", "gauge").value(["destination": name]) == 2)
        #expect(try family("syncgate_verification_findings", "gauge").value(["destination": name, "kind": "missing"]) == 0)

        // The gateway's own figures.
        #expect(try family("syncgate_queue_depth", "gauge").value([:]) == 0)
        #expect(try family("syncgate_passes", "counter").value([:], sample: "syncgate_passes_total") == 1)
        #expect(try family("syncgate_last_complete_pass_timestamp_seconds", "gauge").value([:]).map { $0 > 0 } == true)
        #expect(try family("syncgate_ready", "gauge").value([:]) == 1)
        #expect(try family("syncgate_needs_attention", "gauge").value([:]) == 1)

        // swift-metrics, counted as the engine delivered.
        func counter(_ name: String, _ labels: [String: String]) throws -> Double? {
            try family(name, "counter").value(labels, sample: name + "_total")
        }
        #expect(try counter("syncgate_attempts", ["destination": name]) == 3)
        #expect(try counter("syncgate_synced", ["destination": name]) == 2)
        #expect(try counter("syncgate_bytes_uploaded", ["destination": name]) == 11)
        #expect(try counter("syncgate_retries", ["destination": name]) == 0)
        #expect(try counter("syncgate_failed", ["destination": name, "class": "permanent", "scope": "file"]) == 1)
        for failureClass in ["retryable", "permanent", "deferred"] {
            for scope in ["file", "destination"] where !(failureClass == "permanent" && scope == "file") {
                #expect(try counter("syncgate_failed", ["destination": name, "class": failureClass, "scope": scope]) == 0)
            }
        }
        #expect(try counter("syncgate_waiting", ["destination": vault]).map { $0 >= 1 } == true)
        let durations = try family("syncgate_upload_duration_seconds", "histogram")
        #expect(durations.value(["destination": name], sample: "syncgate_upload_duration_seconds_count") == 2)
        #expect(durations.value(["destination": name, "le": "+Inf"], sample: "syncgate_upload_duration_seconds_bucket") == 2)
        #expect(durations.value(["destination": name, "le": "1800.0"], sample: "syncgate_upload_duration_seconds_bucket") == 2)
        try await server.stop()
    }

    /// The process's own series, read from /proc as every Prometheus client library exports them, and
    /// `syncgate_build_info` (issue 29). The server runs in this test process: its figures are this process's.
    @Test func processSeriesAndBuildInfo() async throws {
        let gateway = try TestGateway(destinations: ["{name: archive, type: local, path: archive}"])
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway)
        let families = try await MetricsTests.parse(try await HTTPCall(base: server.base).get("/metrics").body)
        func value(_ family: String, _ type: String, sample: String? = nil) throws -> Double {
            let found = try #require(families[family], "no family \(family) in \(families.keys.sorted())")
            #expect(found.type == type, "\(family)")
            #expect(!found.help.isEmpty, "\(family) has no HELP")
            return try #require(found.value([:], sample: sample), "\(family): \(found.samples)")
        }
        let now = Date().timeIntervalSince1970
        let started = try value("process_start_time_seconds", "gauge")
        #expect(started <= now + 1 && started > now - 7 * 86400, "\(started) against \(now)")
        let cpu = try value("process_cpu_seconds", "counter", sample: "process_cpu_seconds_total")
        #expect(cpu > 0, "\(cpu)")
        // This process's own resident size as /proc/self/status says (VmRSS, KiB), within a factor of two.
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let rssKiB = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
            .flatMap { Double($0.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: " ")[0]) })
        let resident = try value("process_resident_memory_bytes", "gauge")
        #expect(resident > rssKiB * 1024 / 2 && resident < rssKiB * 1024 * 2, "\(resident) against VmRSS \(rssKiB) KiB")
        #expect(try value("process_virtual_memory_bytes", "gauge") >= resident)
        let open = try value("process_open_fds", "gauge")
        #expect(open >= 3, "\(open)")
        #expect(try value("process_max_fds", "gauge") >= open)
        // A status server not told its build says so in the labels.
        let build = try #require(families["syncgate_build_info"])
        #expect(build.type == "gauge")
        #expect(build.value(["version": "unknown", "commit": "unknown", "build_date": "unknown"]) == 1, "\(build.samples)")
        try await server.stop()
    }
}
