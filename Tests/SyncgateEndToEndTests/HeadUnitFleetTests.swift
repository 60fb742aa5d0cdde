import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// One head unit shared by a fleet: two `syncgate sync` on one PostgreSQL ledger, started together, send a folder to
/// the head-unit simulator (which accepts one session per app) and to a local folder. Only the head unit's leader
/// opens a session: one registration, every file put once; the other instance leaves the head unit to it and sends
/// its share of the local folder.
@Suite("head unit shared by a fleet (real binary, simulator, real server)")
struct HeadUnitFleetTests {
    static let files = 200

    @Test(.enabled(if: PostgresTestServer.enabled && HeadUnitSimulatorProcess.isAvailable, Comment(rawValue: PostgresTestServer.comment)))
    func onlyTheLeaderOpensASession() async throws {
        let dir = try TemporaryDirectory("sg-e2e-hu-fleet")
        defer { dir.remove() }
        // Each answer held 5 ms: the leader's session lasts a second or more, well past the other's start.
        let sim = try await HeadUnitSimulatorProcess(["--delay-ms", "5"])
        defer { sim.stop() }
        try await PostgresTestServer.withDatabase { url, server in
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
                  - name: car
                    type: headunit
                    host: 127.0.0.1
                    port: \(sim.port)
                    app: { name: "Fleet Test", id: "7730001" }
                routes:
                  - match: ["**/*"]
                    to: [archive, car]
                """)
            for i in 0..<Self.files { try dir.write("outbox/f\(i).txt", "file \(i)") }
            let instances = try await ProcessRunner.runTogether(
                TestPaths.executable("syncgate"), ["-vv", "sync"], count: 2, environment: ["SYNCGATE_LEASE_SECONDS": "5"], directory: dir.url)
            let logs = instances.map(\.log)
            for instance in instances { #expect(instance.status == 0, "\(instance.log.suffix(3000))") }

            #expect(sim.rpcLines("RegisterAppInterface").count == 1, "one session: \(sim.rpcLines("RegisterAppInterface"))")
            let puts = sim.rpcLines("PutFile").filter { $0.contains("SUCCESS") }
            let names = puts.compactMap { line in line.split(separator: " ").first { $0.hasPrefix("name=") }.map { String($0.dropFirst(5)) } }
            #expect(names.count == Self.files, "\(names.count) puts")
            #expect(Set(names).count == Self.files, "each file put once")
            let left = logs.filter { $0.contains("car: another instance leads this destination; left to it") }
            #expect(left.count == 1, "exactly one instance left the head unit to the other: \(logs.map { $0.suffix(1500) })")
            for i in 0..<Self.files {
                #expect(dir.exists("synced/f\(i).txt"))
                #expect(try sim.storage.read("f\(i).txt") == Data("file \(i)".utf8))
            }
            #expect(try await server.psql("SELECT count(*) FROM files WHERE status = 'synced'", database: PostgresStateLocation.parse(url).database)
                    == String(2 * Self.files))
        }
    }
}
