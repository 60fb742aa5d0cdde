import Foundation
@testable import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport
import Testing

/// A run stopped by its fence (this instance could not renew its leases in time) lets go of the rows it held: its
/// lease keeper goes on renewing whatever the instance still claims, so a claim kept after the run would hold the
/// row from the whole fleet for as long as the instance lives, when its later passes do not cover that row (a
/// gateway's share of a split walk changes as instances come and go). A fleet test once ended with 8 rows held so
/// by a live gateway, never sent.
@Suite("fleet: a run stopped by its fence leaves no claim behind", .serialized)
struct FleetFencedRunTests {
    let dir: TemporaryDirectory
    static let fileCount = 40

    init() throws { dir = try TemporaryDirectory("sg-fleet-fenced") }

    /// One file at a time at 2 KiB/s: 40 files of 1 KiB take about 20 s, time for the fence to lapse mid-run
    /// (`slow: false`: no bandwidth limit, for the runs after).
    func engine(_ ledger: Ledger, slow: Bool = true) throws -> SyncEngine {
        let config = try GatewayConfig.parse(text: """
            version: 1
            sources:
              - {name: outbox, path: outbox}
            destinations:
              - {name: archive, type: local, path: archive, concurrency: 1\(slow ? ", bandwidth: 2KiB" : "")}
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: PluginRegistry([LocalDestination.registration]))
        return SyncEngine(config: config, ledger: ledger)
    }

    @Test(.enabled(if: PostgresTestServer.enabled, Comment(rawValue: PostgresTestServer.comment)), .timeLimit(.minutes(15)))
    func aRunStoppedByItsFenceLetsGoOfItsClaims() async throws {
        defer { dir.remove() }
        let paths = (0..<Self.fileCount).map { "f\($0).bin" }
        for path in paths { try dir.write("outbox/" + path, Data(repeating: 7, count: 1024)) }
        try await PostgresTestServer.withDatabase { url, _ in
            let direct = try PostgresStateLocation.parse(url)
            let proxy = try await FaultProxy.start(targetPort: direct.port)
            defer { proxy.stop() }
            var proxied = direct
            proxied.port = proxy.port
            let a = try Ledger(state: .postgres(proxied), leaseSeconds: 4, statementTimeout: 5)
            let observer = try Ledger(state: .postgres(direct), leaseSeconds: 30)
            func heldByA() async throws -> Int { try await observer.entries().filter { $0.claimedBy == a.instanceID }.count }

            let run = Task { try await engine(a).run() }
            let started = ContinuousClock.now
            while try await heldByA() == 0, ContinuousClock.now - started < .seconds(120) {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(try await heldByA() > 0, "A never claimed a row")

            // A is cut off from PostgreSQL until it stops starting uploads, then reaches it again mid-run.
            let token = a.fenceToken()
            try proxy.set(["mode": "blackhole"])
            let cut = ContinuousClock.now
            while a.fenceRefusal(destination: "archive", needsOneWriter: false, token: token) == nil, ContinuousClock.now - cut < .seconds(120) {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(a.fenceRefusal(destination: "archive", needsOneWriter: false, token: token) != nil, "A's fence never lapsed")
            try proxy.pass()

            let ended = await run.result
            if case .success(let summary) = ended {
                #expect(summary.exitCode != 0, "the run ended well though its fence lapsed: \(summary.uploaded) uploaded")
            }
            let delivered = paths.filter { (try? dir.read("archive/" + $0)) != nil }.count
            #expect(delivered < Self.fileCount, "the fence lapsed after the last upload (\(delivered) delivered)")
            // A lives on, its lease keeper renewing what it claims; it claims nothing, also a lease later.
            #expect(try await heldByA() == 0, "rows A held after its run")
            try await Task.sleep(for: .seconds(5))
            #expect(try await heldByA() == 0, "rows A held a lease after its run")

            // Nothing was lost: A's next run sends the rest. (Its leases are short: on a loaded machine a run can lapse
            // its fence again, or wait past a statement's deadline; the next run goes on. The rest goes at full speed,
            // so that a run is not 20 s of 4 s leases: in a full run of the suite, five slow runs in a row lapsed.)
            var again: Result<SyncSummary, any Error> = .failure(CancellationError())
            for _ in 0..<5 {
                do {
                    again = .success(try await engine(a, slow: false).run())
                } catch {
                    again = .failure(error)
                }
                if case .success(let summary) = again, summary.exitCode == 0 { break }
            }
            #expect((try? again.get())?.exitCode == 0, "\(again)")
            #expect(paths.allSatisfy { (try? dir.read("archive/" + $0)) == Data(repeating: 7, count: 1024) })
            #expect(try await observer.entries().allSatisfy { $0.status == .synced && $0.claimedBy == nil })
        }
    }
}
