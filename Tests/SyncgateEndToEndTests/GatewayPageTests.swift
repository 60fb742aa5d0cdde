import Foundation
import SyncgateTestSupport
import Testing

/// The status page of the real `syncgate run`, in Debian's headless chromium: it shows each destination, follows a
/// file delivered seconds after it is written, and a click on a failed file's Retry button sends it once the fault
/// is gone. `/metrics` of the same gateway parses as Prometheus text.
@Suite("gateway status page (real binary, headless chromium)", .serialized,
       .enabled(if: BrowserSession.shouldRun, "needs Debian's chromium and Python's websocket-client (scripts/test-deps.d/http.sh)"))
struct GatewayPageTests {
    static func count(_ destination: String, _ what: String) -> String {
        "(document.querySelector('.card[data-destination=\"\(destination)\"] [data-count=\"\(what)\"] b') || {}).textContent"
    }

    @Test func thePageFollowsTheGatewayAndItsRetryButtonWorks() async throws {
        let dir = try TemporaryDirectory("sg-gateway-page")
        defer { dir.remove() }
        let port = Loopback.freePort()
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            gateway: { settle: 200ms, rescan_interval: 10m }
            http: { listen: 127.0.0.1:\(port) }
            destinations:
              - {name: archive, type: local, path: archive, retry: {file: 0, artwork: 0}}
              - {name: vault, type: local, path: vault-file}
            """)
        try dir.write("vault-file", "a file where the vault's folder should be")  // vault: blocked
        try dir.write("outbox/a.txt", "a")
        try dir.write("outbox/report.csv", "id\n1\n")
        try FileManager.default.createDirectory(at: dir.file("archive/report.csv/in-the-way"), withIntermediateDirectories: true)
        let gateway = try ProcessRunner.start(SyncgateCLI.binary, ["run", "-v"], currentDirectory: dir.url, logFile: dir.file("gateway.log"))
        defer {
            kill(gateway.processIdentifier, SIGTERM)
            gateway.waitUntilExit()
        }
        var log: String { (try? String(contentsOf: dir.file("gateway.log"), encoding: .utf8)) ?? "" }
        #expect(await Loopback.waitForListener(port: port, timeout: 60, while: { gateway.isRunning }), "\(log)")

        let browser = try await BrowserSession()
        defer { browser.close() }
        try await browser.open("http://127.0.0.1:\(port)/")
        try await browser.waitFor("document.querySelectorAll('.card').length === 2")
        try await browser.waitFor("document.querySelector('.card[data-destination=\"vault\"] .state')?.textContent === 'blocked'")
        try await browser.waitFor(Self.count("archive", "failed") + " === '1'")
        #expect(try await browser.evaluate(Self.count("archive", "synced")) as? String == "1")

        // A file written while the page is open: delivered seconds later, and the page follows.
        try await browser.waitFor("document.getElementById('live').classList.contains('on')")
        try dir.write("outbox/new.txt", "new")
        try await browser.waitFor(Self.count("archive", "synced") + " === '2'", timeout: 30)
        #expect(try dir.read("archive/new.txt") == Data("new".utf8))

        // The fault is gone: Retry on the failed file sends it.
        try FileManager.default.removeItem(at: dir.file("archive/report.csv"))
        let row = #"li.file[data-destination="archive"][data-path="report.csv"]"#
        try await browser.click(row + " button.retry")
        try await browser.waitFor(Self.count("archive", "synced") + " === '3'", timeout: 30)
        #expect(try dir.read("archive/report.csv") == Data("id\n1\n".utf8))
        let errors = try await browser.log().filter { $0.hasPrefix("exception") || $0.hasPrefix("console.error") }
        #expect(errors.isEmpty, "\(errors)")

        // /metrics parses as Prometheus text and has the gateway's families.
        let parser = TestPaths.packageRoot.appendingPathComponent("Tests/PrometheusParser/parse_metrics.py").path
        let fetch = "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())"
        let metrics = try await ProcessRunner.run(
            URL(fileURLWithPath: "/bin/bash"),
            ["-c", "python3 -c \"$0\" \"$1\" | python3 \"$2\"", fetch, "http://127.0.0.1:\(port)/metrics", parser])
        #expect(metrics.status == 0, "\(metrics.output)")
        for family in ["syncgate_files", "syncgate_destination_up", "syncgate_queue_depth", "syncgate_synced_total",
                       "syncgate_upload_duration_seconds", "syncgate_last_complete_pass_timestamp_seconds"] {
            #expect(metrics.stdout.contains(family), "\(family): \(metrics.stdout.prefix(2000))")
        }
    }
}
