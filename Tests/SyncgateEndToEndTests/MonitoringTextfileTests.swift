import Foundation
import SyncgateTestSupport
import Testing

/// The textfile for node_exporter (`status --prometheus`, issue 29): the last run's time and exit code, so that a
/// timer that stopped can be alerted on, and the build; `--prometheus -` on standard output. Read by
/// prometheus_client's parser, as a scraper would.
@Suite("Prometheus textfile (real binary)")
struct MonitoringTextfileTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-textfile")
        cli = SyncgateCLI(dir: dir)
    }

    @Test func lastRunAndBuildInfo() async throws {
        defer { dir.remove() }
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations: [{name: archive, type: local, path: synced}]
            """)
        try dir.write("outbox/a.txt", "alpha")

        // Before any run: the time is 0 and there is no exit code yet.
        let never = try await PrometheusText.parse(try await cli.run(["status", "--prometheus", "-"]).stdout)
        #expect(never["syncgate_last_run_timestamp_seconds"]?.value([:]) == 0)
        #expect(never["syncgate_last_run_exit_code"] == nil)

        let before = Date().timeIntervalSince1970
        #expect(try await cli.run(["sync"]).status == 0)
        let after = Date().timeIntervalSince1970
        let text = try await cli.run(["status", "--prometheus", "-"])
        #expect(text.status == 0, "\(text.stderr)")
        // Only the metrics on standard output: the report is left out.
        #expect(!text.stdout.contains("archive (local)"), "\(text.stdout)")
        let families = try await PrometheusText.parse(text.stdout)
        let last = try #require(families["syncgate_last_run_timestamp_seconds"])
        #expect(last.type == "gauge" && !last.help.isEmpty)
        let time = try #require(last.value([:]))
        #expect(time >= before - 1 && time <= after + 1, "\(time) not in \(before)...\(after)")
        #expect(families["syncgate_last_run_exit_code"]?.value([:]) == 0)
        let build = try #require(families["syncgate_build_info"])
        #expect(build.type == "gauge")
        let sample = try #require(build.samples.first)
        #expect(build.samples.count == 1 && sample.value == 1)
        // The version --version prints, and the commit it names (or `unknown`).
        let version = try await cli.run(["--version"]).stdout
        #expect(version.hasPrefix("syncgate \(sample.labels["version"] ?? "?") "), "\(sample.labels) against \(version)")
        let commit = try #require(sample.labels["commit"])
        #expect(version.contains(commit == "unknown" ? "commit unknown" : "commit \(commit)"), "\(sample.labels) against \(version)")
        #expect(sample.labels["build_date"] != nil)

        // A run that fails: its exit code, in the file written for node_exporter (atomically, as before).
        try dir.write("outbox/sub/x.txt", "blocked")
        try dir.write("synced/sub", "a file where the folder should be")
        #expect(try await cli.run(["sync"]).status == 1)
        let written = try await cli.run(["status", "--prometheus", dir.file("syncgate.prom").path])
        #expect(written.status == 0, "\(written.stderr)")
        #expect(written.stdout.contains("archive"), "the report still goes to standard output: \(written.stdout)")
        let file = try await PrometheusText.parse(try String(contentsOf: dir.file("syncgate.prom"), encoding: .utf8))
        #expect(file["syncgate_last_run_exit_code"]?.value([:]) == 1)
        #expect((file["syncgate_last_run_timestamp_seconds"]?.value([:]) ?? 0) >= time)

        // `-` with --json would mix two formats on one stream: refused.
        #expect(try await cli.run(["status", "--json", "--prometheus", "-"]).status == 64)
    }
}
