import Foundation
import SyncgateTestSupport
import Testing

/// The order files reach a head unit in (`order:`, route `priority`), read from the simulator's own record of the
/// PutFiles it stored, in the order it stored them: what is asserted is the order of arrival, never a time.
@Suite(
    "order: files reach a head unit in the destination's order (real binary, simulator over TCP)", .serialized,
    .enabled(if: HeadUnitTestEnvironment.simulatorReady, HeadUnitTestEnvironment.simulatorReason))
struct HeadUnitOrderTests {
    /// The names of the files the simulator stored whole, in the order their last PutFile succeeded.
    static func arrivals(_ sim: HeadUnitSimulatorProcess, sizes: [String: Int]) -> [String] {
        var stored: [String: Int] = [:]
        var arrived: [String] = []
        for line in sim.rpcLines("PutFile") where line.hasSuffix("-> SUCCESS") {
            let words = line.split(separator: " ")
            func value(_ key: String) -> String? { words.first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) } }
            guard let name = value("name"), let offset = value("offset").flatMap(Int.init), let bytes = value("bytes").flatMap(Int.init) else { continue }
            stored[name] = offset + bytes
            if offset + bytes == sizes[name], !arrived.contains(name) { arrived.append(name) }
        }
        return arrived
    }

    @Test("order: priority, a head unit there for a few seconds only: every file of the priority route arrives before any other")
    func priorityFirstWithinAWindow() async throws {
        // Every response held 300 ms: the 80 other files need about 6 s even 4 at a time, more than the window
        // (counted from the app's registration); the 4 priority files need about one second.
        try await HeadUnitTestEnvironment.withSimulator(["--accept-for", "6", "--delay-ms", "300"]) { sim in
            let run = try HeadUnitCLIRun(sim: sim, retries: 0, extra: "    order: priority", routes: """
                  - match: ["**/*"]
                    to: [car]
                  - match: ["vip/**"]
                    to: [car]
                    priority: 10
                """)
            defer { run.remove() }
            var sizes: [String: Int] = [:]
            // The walk meets `bulk/` first: in the walk's order every other file would go before the priority ones.
            for i in 0..<80 {
                let size = 20_000 + i
                try run.source(String(format: "bulk/b%02d.bin", i), HeadUnitFixtures.bytes(size, seed: UInt64(i)))
                sizes[String(format: "bulk_b%02d.bin", i)] = size
            }
            for i in 0..<4 {
                let size = 9_000 + i
                try run.source("vip/v\(i).bin", HeadUnitFixtures.bytes(size, seed: UInt64(100 + i)))
                sizes["vip_v\(i).bin"] = size
            }
            let result = try await run.sync()
            // 0 when everything made it within the window, 75 when the head unit went away first.
            #expect(result.status == 0 || result.status == 75, "\(result.result.output)")
            #expect(sim.log.contains("WINDOW open for 6.0s"))
            let arrived = Self.arrivals(sim, sizes: sizes)
            let vip = arrived.filter { $0.hasPrefix("vip_") }
            let others = arrived.filter { !$0.hasPrefix("vip_") }
            #expect(!vip.isEmpty, "no priority file arrived: \(sim.log.suffix(3000))")
            if let firstOther = arrived.firstIndex(where: { !$0.hasPrefix("vip_") }) {
                // Some other file arrived: then every priority file did, and each before it.
                #expect(vip.count == 4, "\(arrived)")
                #expect(arrived[..<firstOther].allSatisfy { $0.hasPrefix("vip_") } && firstOther == 4, "\(arrived)")
            }
            for name in arrived { #expect(sizes[name] != nil, "\(name)") }
            print("order: priority within the window: \(vip.count) of 4 priority files, \(others.count) of 80 others arrived; exit \(result.status)")
        }
    }

    @Test("a head unit with no order: set gets artwork first (an app's icons matter first), then the walk's order")
    func artworkFirstByDefault() async throws {
        try await HeadUnitTestEnvironment.withSimulator { sim in
            let run = try HeadUnitCLIRun(sim: sim)
            defer { run.remove() }
            let files: [(path: String, name: String, size: Int)] = [
                ("a/first.bin", "a_first.bin", 3_000), ("b/second.wav", "b_second.wav", 5_000),
                ("z/icon.png", "z_icon.png", 2_000), ("z/cover.jpg", "z_cover.jpg", 4_000),
            ]
            for (index, file) in files.enumerated() { try run.source(file.path, HeadUnitFixtures.bytes(file.size, seed: UInt64(index))) }
            let result = try await run.sync()
            #expect(result.status == 0, "\(result.result.output)")
            let arrived = Self.arrivals(sim, sizes: Dictionary(uniqueKeysWithValues: files.map { ($0.name, $0.size) }))
            // Within a tier the files go in parallel (the two started together may swap): the artwork as a set first.
            #expect(arrived.count == 4, "\(arrived)")
            #expect(Set(arrived.prefix(2)) == ["z_cover.jpg", "z_icon.png"], "\(arrived)")
            #expect(Set(arrived.suffix(2)) == ["a_first.bin", "b_second.wav"], "\(arrived)")
        }
    }
}
