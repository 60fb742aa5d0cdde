import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// An exec plugin that declares `one_writer` (or a config that sets `one_writer: true`) is sent to by one instance
/// of a fleet at a time, as a head unit or a sheet is: two `syncgate sync` on one PostgreSQL ledger, started
/// together, and every put reaches the plugin of one of them; the other leaves the destination to its leader and
/// still sends its share to the local folder beside it.
@Suite("exec plugin with one writer in a fleet (real binary, real server)")
struct ExecOneWriterTests {
    static let testPlugin = TestPaths.packageRoot.appendingPathComponent("Tests/ExecPlugins/test_plugin.py").path
    static let files = 600

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)),
          arguments: ["declared by the plugin", "set in the config"])
    func onlyTheLeaderSendsToTheDestination(how: String) async throws {
        let dir = try TemporaryDirectory("sg-e2e-onewriter")
        defer { dir.remove() }
        try await PostgresTestServer.withDatabase { url, server in
            let declared = how == "declared by the plugin"
            // The plugins take a second to answer their hello: both instances are running when they ask for the
            // destination's lead, which each does once its plugin has said what it needs.
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
                  - name: ledgerbook
                    type: exec
                    command: ["\(Self.testPlugin)", "--misbehave", "slow-start"]
                    env: {PLUGIN_DELAY: "1", TEST_PLUGIN_ONE_WRITER: "\(declared ? "1" : "0")", TEST_PLUGIN_PUT_LOG: "\(dir.file("puts.log").path)"}
                    settings: {path: "\(dir.file("book").path)"}
                    one_writer: \(declared ? "false" : "true")
                routes:
                  - match: ["**/*"]
                    to: [archive, ledgerbook]
                """)
            for i in 0..<Self.files { try dir.write("outbox/d\(i % 10)/f\(i).txt", "file \(i)") }
            let instances = try await ProcessRunner.runTogether(
                TestPaths.executable("syncgate"), ["-vv", "sync"], count: 2, environment: ["SYNCGATE_LEASE_SECONDS": "5"], directory: dir.url)
            let logs = instances.map(\.log)
            for instance in instances { #expect(instance.status == 0, "\(instance.log.suffix(3000))") }

            // Every file reached the plugin once, through one plugin process: the leader's.
            let puts = try String(contentsOf: dir.file("puts.log"), encoding: .utf8).split(separator: "\n").map { $0.split(separator: " ", maxSplits: 1) }
            #expect(puts.count == Self.files, "\(puts.count) puts")
            #expect(Set(puts.map { String($0[1]) }).count == Self.files)
            #expect(Set(puts.map { String($0[0]) }).count == 1, "puts came from the plugins of both instances")
            // The other instance left it to its leader (so both were running at that moment).
            let left = logs.filter { $0.contains("ledgerbook: another instance leads this destination; left to it") }
            #expect(left.count == 1, "exactly one instance left the destination to the other: \(logs.map { $0.suffix(1500) })")
            // Every file is at both destinations.
            for i in 0..<Self.files { #expect(dir.exists("synced/d\(i % 10)/f\(i).txt") && dir.exists("book/d\(i % 10)/f\(i).txt")) }
            #expect(try await server.psql("SELECT count(*) FROM files WHERE status = 'synced'", database: PostgresStateLocation.parse(url).database)
                    == String(2 * Self.files))
        }
    }
}
