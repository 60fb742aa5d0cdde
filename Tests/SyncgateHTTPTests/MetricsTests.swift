import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// `/metrics` read by Prometheus's own Python client (its text parser), after a real pass: the ledger's gauges,
/// the gateway's figures and the delivery counters of swift-metrics, each family typed and described.
@Suite("metrics")
struct MetricsTests {
    struct Family: Decodable {
        struct Sample: Decodable {
            var name: String
            var labels: [String: String]
            var value: Double
        }

        var name: String
        var type: String
        var help: String
        var samples: [Sample]

        /// The value of the one sample named `sample` (the family's name by default) with these labels.
        func value(_ labels: [String: String], sample: String? = nil) -> Double? {
            let matching = samples.filter { s in
                s.name == (sample ?? name) && labels.allSatisfy { s.labels[$0.key] == $0.value }
            }
            return matching.count == 1 ? matching[0].value : nil
        }
    }

    /// Parses the text with prometheus_client (Tests/PrometheusParser/parse_metrics.py).
    static func parse(_ text: String) async throws -> [String: Family] {
        let dir = try TemporaryDirectory("sg-metrics")
        defer { dir.remove() }
        let file = try dir.write("metrics.txt", text)
        let script = TestPaths.packageRoot.appendingPathComponent("Tests/PrometheusParser/parse_metrics.py")
        let result = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, file.path], timeout: 60)
        try #require(result.status == 0, "prometheus_client: \(result.stderr)")
        let families = try JSONDecoder().decode([Family].self, from: Data(result.stdout.utf8))
        return Dictionary(families.map { ($0.name, $0) }) { first, _ in first }
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
}
