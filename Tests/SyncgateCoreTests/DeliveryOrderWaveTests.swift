import Foundation
@testable import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport
import Synchronization
import Testing

/// `order:` through the real engine and the local destination, with waves made tiny: the order holds within each
/// wave (what engine.md promises), and a wave is not reordered against the next (its documented limit).
@Suite("order: within waves (engine, local destination)")
struct DeliveryOrderWaveTests {
    final class Starts: Sendable {
        let paths = Mutex<[String]>([])
    }

    @Test func priorityTiersHoldWithinEachWaveAndWavesKeepTheWalksOrder() async throws {
        let dir = try TemporaryDirectory("sg-order-waves")
        defer { dir.remove() }
        // 24 new files, waves of 8: every fourth file is on the priority route.
        for index in 0..<24 { try dir.write("out/" + String(format: "%02d", index) + (index % 4 == 3 ? "-p.txt" : "-f.txt"), "file \(index)") }
        let config = try GatewayConfig.parse(text: """
            version: 1
            state: state/ledger.sqlite
            sources: [{name: out, path: out}]
            destinations:
              - {name: copy, type: local, path: copy, fsync: false, concurrency: 3, order: priority}
            routes:
              - {match: ["**/*"], to: [copy]}
              - {match: ["*-p.txt"], to: [copy], priority: 1}
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: PluginRegistry([LocalDestination.registration]))
        let engine = SyncEngine(config: config, ledger: try Ledger(state: config.state))
        var options = SyncOptions()
        options.waveSize = 8
        let starts = Starts()
        let summary = try await engine.run(options) { event in
            guard case .started = event.kind else { return }
            starts.paths.withLock { $0.append(event.file.path) }
        }
        #expect(summary.uploaded == 24)
        let started = starts.paths.withLock { $0 }
        #expect(started.count == 24)
        // The walk's order is the names' byte order: wave k holds the files numbered 8k to 8k+7.
        func wave(_ path: String) -> Int { Int(path.prefix(2))! / 8 }
        #expect(started.map(wave) == started.map(wave).sorted(), "waves are sent one after another: \(started)")
        for k in 0..<3 {
            let inWave = started.filter { wave($0) == k }
            #expect(inWave.count == 8)
            // Its 2 priority files first (a tier of their own), then its 6 others.
            #expect(inWave.prefix(2).allSatisfy { $0.hasSuffix("-p.txt") } && inWave.dropFirst(2).allSatisfy { $0.hasSuffix("-f.txt") }, "\(inWave)")
        }
    }
}
