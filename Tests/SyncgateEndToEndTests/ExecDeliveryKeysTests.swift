import Foundation
import SyncgateTestSupport
import Testing

/// Issue 32: every delivery key works for an exec destination or is refused with a located error. `bandwidth`
/// paces a plugin that declares `paces` (it asks for each piece of a file and syncgate grants it from the
/// destination's one token bucket), constant or by a timetable, and refuses one that does not, at the key's line;
/// `delete_remote` refuses a plugin that cannot delete; `rate` and `min_interval` hold the plugin's requests as any
/// destination's. Times are checked from below only (a paced run cannot be faster than its limit, however loaded the
/// machine).
@Suite("exec destinations and the delivery keys (real binary)")
struct ExecDeliveryKeysTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-exec-keys")
        cli = SyncgateCLI(dir: dir)
    }

    /// A config with one exec destination running `command` (the test plugin by default) and `keys`.
    func writeConfig(_ keys: String, mode: String? = nil, command: [String]? = nil, settings: String = "{path: out}") throws {
        let program = command ?? ([ExecPluginTests.testPlugin] + (mode.map { ["--misbehave", $0] } ?? []))
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: copies
                type: exec
                command: [\(program.map { "\"\($0)\"" }.joined(separator: ", "))]
                concurrency: 2
                settings: \(settings)
                \(keys)
            """)
    }

    /// `count` files of `size` bytes in outbox/.
    func writeFiles(_ count: Int, size: Int) throws {
        for index in 0..<count {
            try dir.write("outbox/f\(index).bin", String(repeating: Character(UnicodeScalar(UInt8(97 + index % 26))), count: size))
        }
    }

    func expectDelivered(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for index in 0..<count {
            let copy = try? dir.read("out/f\(index).bin")
            #expect(copy == (try dir.read("outbox/f\(index).bin")), "f\(index).bin", sourceLocation: sourceLocation)
        }
    }

    /// Syncs; returns the seconds it took.
    func timedSync(sourceLocation: SourceLocation = #_sourceLocation) async throws -> Double {
        let started = ContinuousClock.now
        let result = try await cli.run(["sync"], timeout: 240)
        let took = ContinuousClock.now - started
        #expect(result.status == 0, "\(result.stderr.suffix(2000))", sourceLocation: sourceLocation)
        return Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
    }

    @Test func bandwidthPacesAPluginThatPaces() async throws {
        defer { dir.remove() }
        // 3 MiB at 1 MiB/s: about 3 s (less the bucket's 0.1 s burst); without pacing the plugin copies it at once.
        try writeFiles(3, size: 1 << 20)
        try writeConfig("bandwidth: 1MiB")
        let validate = try await cli.run(["validate"])
        #expect(validate.status == 0, "\(validate.stderr)")
        let took = try await timedSync()
        #expect(took >= 2.4, "3 MiB at 1 MiB/s took \(took) s")
        try expectDelivered(3)
    }

    /// The webhook reference plugin paces its puts on threads of its own (grants handed over by its main thread).
    @Test func bandwidthPacesTheWebhookReferencePlugin() async throws {
        defer { dir.remove() }
        let sink = try WebhookSink(dir)
        defer { sink.stop() }
        try writeFiles(3, size: 1 << 20)
        try writeConfig("bandwidth: 1MiB", command: [ExecPluginTests.webhookPlugin], settings: "{url: \"http://127.0.0.1:\(sink.port)/in\"}")
        let took = try await timedSync()
        #expect(took >= 2.4, "3 MiB at 1 MiB/s took \(took) s")
        for index in 0..<3 {
            let copy = try? dir.read("received/f\(index).bin")
            #expect(copy == (try dir.read("outbox/f\(index).bin")), "f\(index).bin")
        }
    }

    @Test func aBandwidthTimetablePacesAPluginThatPaces() async throws {
        defer { dir.remove() }
        // The same limit at every time of day, written as a timetable (rclone's form, local time).
        try writeFiles(3, size: 1 << 20)
        try writeConfig("bandwidth: \"00:00,1MiB 12:00,1024KiB\"")
        let took = try await timedSync()
        #expect(took >= 2.4, "3 MiB at 1 MiB/s took \(took) s")
        try expectDelivered(3)
    }

    @Test func bandwidthRefusesAPluginThatDoesNotPaceAtTheKeysLine() async throws {
        defer { dir.remove() }
        try writeFiles(1, size: 10)
        try writeConfig("bandwidth: 5MiB", mode: "no-pace")
        let validate = try await cli.run(["validate"])
        #expect(validate.status == 78, "\(validate.stdout)\(validate.stderr)")
        #expect(validate.stderr.contains("plugins.yaml:9:16: destinations[0].bandwidth: needs a plugin that paces its reads"), "\(validate.stderr)")
        let sync = try await cli.run(["sync", "--json"])
        #expect(sync.status != 0)
        #expect(!dir.exists("out/f0.bin"), "nothing is sent unpaced")
        let status = try await cli.run(["status", "--json"])
        let line = (SyncgateCLI.json(status.stdout)?["destinations"] as? [[String: Any]])?.first
        #expect(line?["state"] as? String == "blocked", "\(String(describing: line))")
        #expect("\(String(describing: line))".contains("destinations[0].bandwidth"), "\(String(describing: line))")
    }

    @Test func bandwidthOffOrOffAllDayNeedsNoPacing() async throws {
        defer { dir.remove() }
        try writeFiles(1, size: 10)
        for limit in ["off", "\"08:00,off 19:00,off\""] {
            try writeConfig("bandwidth: \(limit)", mode: "no-pace")
            let validate = try await cli.run(["validate"])
            #expect(validate.status == 0, "\(limit): \(validate.stderr)")
        }
        _ = try await timedSync()
        try expectDelivered(1)
    }

    @Test func bandwidthFromDefaultsIsRefusedAtTheDestination() async throws {
        defer { dir.remove() }
        try writeFiles(1, size: 10)
        try dir.write("plugins.yaml", """
            version: 1
            defaults: {bandwidth: 5MiB}
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: copies
                type: exec
                command: ["\(ExecPluginTests.testPlugin)", "--misbehave", "no-pace"]
                settings: {path: out}
            """)
        let validate = try await cli.run(["validate"])
        #expect(validate.status == 78, "\(validate.stderr)")
        #expect(validate.stderr.contains("destinations[0].bandwidth: needs a plugin that paces its reads"), "\(validate.stderr)")
    }

    @Test func deleteRemoteRefusesAPluginThatCannotDelete() async throws {
        defer { dir.remove() }
        // The webhook plugin has no delete; its settings are only checked for their form at configure.
        try writeFiles(1, size: 10)
        try writeConfig("delete_remote: true", command: [ExecPluginTests.webhookPlugin], settings: "{url: \"http://127.0.0.1:9/in\"}")
        let validate = try await cli.run(["validate"])
        #expect(validate.status == 78, "\(validate.stderr)")
        #expect(validate.stderr.contains("plugins.yaml:9:20: destinations[0].delete_remote: needs a plugin that deletes"), "\(validate.stderr)")
        try writeConfig("delete_remote: false", command: [ExecPluginTests.webhookPlugin], settings: "{url: \"http://127.0.0.1:9/in\"}")
        let accepted = try await cli.run(["validate"])
        #expect(accepted.status == 0, "\(accepted.stderr)")
    }

    @Test func concurrencyBoundsAPluginsPutsInFlight() async throws {
        defer { dir.remove() }
        // The plugin answers no put until 2 are in flight (settings.hold; after 20 s without a put it answers those
        // it holds) and writes, at each put it reads, how many it has read and not answered: with `concurrency: 2`
        // that reaches 2 (syncgate uses the concurrency) and never 3 (a put sent before one in flight was answered).
        try writeFiles(6, size: 100)
        try writeConfig("", settings: "{path: out, hold: \"2\", in_flight: in-flight.txt}")
        _ = try await timedSync()
        try expectDelivered(6)
        let seen = String(decoding: try dir.read("in-flight.txt"), as: UTF8.self).split(separator: "\n").compactMap { Int($0) }
        #expect(seen.count >= 6, "a line per put: \(seen)")
        #expect(seen.max() == 2, "puts in flight at once, as the plugin saw them: \(seen)")
    }

    @Test func minIntervalSpacesAPluginsUploads() async throws {
        defer { dir.remove() }
        // 6 uploads, 300 ms apart at least: 1.5 s from the first start to the last.
        try writeFiles(6, size: 100)
        try writeConfig("min_interval: 300ms")
        let took = try await timedSync()
        #expect(took >= 1.4, "6 uploads 300 ms apart took \(took) s")
        try expectDelivered(6)
    }

    @Test func rateHoldsAPluginsRequests() async throws {
        defer { dir.remove() }
        // 6 uploads (and the probe) at 4 requests a second, a burst of 1: 1.5 s at least.
        try writeFiles(6, size: 100)
        try writeConfig("rate: {requests_per_second: 4}")
        let took = try await timedSync()
        #expect(took >= 1.2, "7 requests at 4/s took \(took) s")
        try expectDelivered(6)
    }
}
