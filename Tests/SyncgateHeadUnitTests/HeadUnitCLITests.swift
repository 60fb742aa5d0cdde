import Foundation
import SyncgateTestSupport
import Testing

/// The real `syncgate` binary against the head-unit simulator over TCP.
@Suite(
    "syncgate sync to a head unit (real binary, simulator over TCP)", .serialized,
    .enabled(if: HeadUnitTestEnvironment.simulatorReady, HeadUnitTestEnvironment.simulatorReason))
struct HeadUnitCLITests {
    func events(_ events: [[String: Any]], _ kind: String) -> [[String: Any]] { events.filter { $0["event"] as? String == kind } }

    @Test("icons, audio and a 1 MiB file arrive byte-identical; a second sync sends nothing; ls and rm")
    func deliverThenNothing() async throws {
        try await HeadUnitTestEnvironment.withSimulator { sim in
            let run = try HeadUnitCLIRun(sim: sim)
            defer { run.remove() }
            let files: [String: Data] = [
                "icons/app.png": HeadUnitFixtures.bytes(4_000, seed: 1),
                "covers/album one.jpg": HeadUnitFixtures.bytes(90_000, seed: 2),
                "prompts/turn-left.wav": HeadUnitFixtures.bytes(300_000, seed: 3),
                "prompts/chime.mp3": HeadUnitFixtures.bytes(20_000, seed: 4),
                "data/map.bin": HeadUnitFixtures.bytes(1_048_576, seed: 5),
            ]
            for (path, data) in files { try run.source(path, data) }
            let first = try await run.sync()
            #expect(first.status == 0, "\(first.result.output)")
            #expect(events(first.events, "synced").count == files.count)
            for (path, data) in files {
                let name = path.replacingOccurrences(of: "/", with: "_")
                #expect(try sim.storage.read(name) == data, "\(name)")
            }
            let putsAfterFirst = sim.rpcLines("PutFile").count
            #expect(putsAfterFirst == 1 + 1 + 3 + 1 + 9)
            #expect(sim.rpcLines("UnregisterAppInterface").count == 1)

            let second = try await run.sync()
            #expect(second.status == 0, "\(second.result.output)")
            #expect(events(second.events, "synced").isEmpty)
            #expect(sim.rpcLines("PutFile").count == putsAfterFirst)

            let ls = try await run.run(["ls", "--destination", "car"])
            #expect(ls.status == 0, "\(ls.output)")
            #expect(ls.stdout.contains("data_map.bin") && ls.stdout.contains("icons_app.png"))
            #expect(ls.stdout.contains("5 file(s)") && ls.stdout.contains("available"))

            let rm = try await run.run(["rm", "--destination", "car", "prompts_chime.mp3", "not-there.png"])
            #expect(rm.status != 0)
            #expect(rm.output.contains("prompts_chime.mp3"))
            #expect(rm.output.contains("not-there.png"))
            #expect(!sim.storage.exists("prompts_chime.mp3"))
            #expect(sim.storage.exists("data_map.bin"))
        }
    }

    @Test("a file the head unit forgot is sent again on the next sync (ListFiles is the truth)")
    func forgottenFileResent() async throws {
        try await HeadUnitTestEnvironment.withSimulator { sim in
            let run = try HeadUnitCLIRun(sim: sim)
            defer { run.remove() }
            try run.source("a.png", HeadUnitFixtures.bytes(1_000, seed: 1))
            try run.source("b.png", HeadUnitFixtures.bytes(1_000, seed: 2))
            #expect(try await run.sync().status == 0)
            try FileManager.default.removeItem(at: sim.storage.file("b.png"))
            let again = try await run.sync()
            #expect(again.status == 0, "\(again.result.output)")
            #expect(events(again.events, "synced").compactMap { $0["path"] as? String } == ["b.png"])
            #expect(try sim.storage.read("b.png") == HeadUnitFixtures.bytes(1_000, seed: 2))
        }
    }

    @Test("more files than ListFiles names (SDL Core names at most 1,000): a second sync sends nothing")
    func listingCappedAtAThousandIsNotTakenAsMissingFiles() async throws {
        try await HeadUnitTestEnvironment.withSimulator { sim in
            let run = try HeadUnitCLIRun(sim: sim)
            defer { run.remove() }
            for index in 0..<1_005 { try run.source(String(format: "f%04d.png", index), HeadUnitFixtures.bytes(100, seed: UInt64(index))) }
            let first = try await run.sync()
            #expect(first.status == 0, "\(first.result.output)")
            #expect(events(first.events, "synced").count == 1_005)
            let putsAfterFirst = sim.rpcLines("PutFile").count
            // The second session's ListFiles names 1,000 of the 1,005: the 5 it leaves out are not missing.
            let again = try await run.sync()
            #expect(again.status == 0, "\(again.result.output)")
            #expect(events(again.events, "synced").isEmpty, "\(events(again.events, "synced").count) sent again")
            #expect(sim.rpcLines("PutFile").count == putsAfterFirst)
            #expect(sim.rpcLines("ListFiles").count >= 2)
        }
    }

    @Test("the connection cut mid-file: the file is retried on a new session and arrives whole")
    func connectionCutRecovers() async throws {
        try await HeadUnitTestEnvironment.withSimulator(["--cut-after-bytes", "600000"]) { sim in
            let run = try HeadUnitCLIRun(sim: sim)
            defer { run.remove() }
            try run.source("big.bin", HeadUnitFixtures.bytes(1_048_576, seed: 7))
            let result = try await run.sync()
            #expect(result.status == 0, "\(result.result.output)")
            #expect(!events(result.events, "retrying").isEmpty)
            #expect(try sim.storage.read("big.bin") == HeadUnitFixtures.bytes(1_048_576, seed: 7))
            #expect(sim.log.contains("FAULT cut the connection"))
            #expect(sim.log.components(separatedBy: "START-SERVICE").count - 1 == 2)
        }
    }

    @Test("a CRC error is retried and the file delivered")
    func crcErrorRetried() async throws {
        try await HeadUnitTestEnvironment.withSimulator(["--corrupt-puts", "1"]) { sim in
            let run = try HeadUnitCLIRun(sim: sim, retries: 1)
            defer { run.remove() }
            try run.source("cover.png", HeadUnitFixtures.bytes(50_000, seed: 8))
            let result = try await run.sync()
            #expect(result.status == 0, "\(result.result.output)")
            let retrying = events(result.events, "retrying")
            #expect(retrying.count == 1)
            #expect("\(retrying.first ?? [:])".contains("CORRUPTED_DATA"))
            #expect(try sim.storage.read("cover.png") == HeadUnitFixtures.bytes(50_000, seed: 8))
        }
    }

    @Test("level NONE with more than 5 new files: none fails, they wait for FULL (no retries allowed at all)")
    func levelNoneWaits() async throws {
        // FULL comes 1 s after the first refusal, however long the first 5 uploads take on a loaded machine.
        try await HeadUnitTestEnvironment.withSimulator(["--activate-after=-1", "--activate-after-refusal", "1"]) { sim in
            let run = try HeadUnitCLIRun(sim: sim, retries: 0)
            defer { run.remove() }
            for i in 1...8 { try run.source("art/\(i).png", HeadUnitFixtures.bytes(500 + i, seed: UInt64(i))) }
            let result = try await run.sync()
            #expect(result.status == 0, "\(result.result.output)")
            #expect(events(result.events, "failed").isEmpty)
            #expect(events(result.events, "synced").count == 8)
            for i in 1...8 { #expect(try sim.storage.read("art_\(i).png") == HeadUnitFixtures.bytes(500 + i, seed: UInt64(i))) }
            #expect(sim.rpcLines("PutFile").contains { $0.contains("REJECTED (level NONE)") })
        }
    }

    @Test("no StartService ACK: the head unit is unavailable for that reason, its file waits, exit 75")
    func noACK() async throws {
        try await HeadUnitTestEnvironment.withSimulator(["--no-ack"]) { sim in
            let run = try HeadUnitCLIRun(sim: sim, responseTimeout: "500ms", retries: 0)
            defer { run.remove() }
            try run.source("x.png", HeadUnitFixtures.bytes(100, seed: 1))
            let result = try await run.sync()
            #expect(result.status == 75, "\(result.result.output)")
            let rows = try await run.statusFiles()
            #expect(rows.count == 1)
            #expect(rows.first?["status"] as? String == "pending")
            #expect(rows.first?["attempts"] as? Int == 0)
            let destination = try #require(try await run.statusDestinations().first)
            #expect(destination["state"] as? String == "unavailable")
            let error = destination["last_error"] as? String ?? ""
            #expect(error.contains("no StartService ACK"), "\(destination)")
            #expect(error.contains("500ms"), "\(destination)")
        }
    }

    @Test("two paths that map to the same head-unit name both fail clearly")
    func nameCollision() async throws {
        try await HeadUnitTestEnvironment.withSimulator { sim in
            let run = try HeadUnitCLIRun(sim: sim)
            defer { run.remove() }
            try run.source("a/b.png", HeadUnitFixtures.bytes(10, seed: 1))
            try run.source("a_b.png", HeadUnitFixtures.bytes(10, seed: 2))
            try run.source("fine.png", HeadUnitFixtures.bytes(10, seed: 3))
            let result = try await run.sync()
            #expect(result.status == 1, "\(result.result.output)")
            let failed = events(result.events, "failed")
            #expect(Set(failed.compactMap { $0["path"] as? String }) == ["a/b.png", "a_b.png"])
            #expect(failed.allSatisfy { "\($0)".contains("a/b.png") && "\($0)".contains("a_b.png") })
            #expect(sim.storage.exists("fine.png"))
            #expect(!sim.storage.exists("a_b.png"))
        }
    }

    @Test("a file that does not fit the space left waits (the head unit is full), before it is sent; one larger than all the room fails")
    func noSpace() async throws {
        try await HeadUnitTestEnvironment.withSimulator(["--quota", "100000"]) { sim in
            let run = try HeadUnitCLIRun(sim: sim)
            defer { run.remove() }
            try run.source("a.bin", HeadUnitFixtures.bytes(60_000, seed: 1))
            try run.source("b.bin", HeadUnitFixtures.bytes(60_000, seed: 2))
            let result = try await run.sync()
            // Only a retryable (destination-scoped) error remains: exit 75, the file is tried again by a later sync.
            #expect(result.status == 75, "\(result.result.output)")
            let synced = events(result.events, "synced").compactMap { $0["path"] as? String }
            #expect(synced.count == 1)
            let waiting = synced.first == "a.bin" ? "b.bin" : "a.bin"
            // The waiting file was never sent.
            #expect(!sim.rpcLines("PutFile").contains { $0.contains("name=\(waiting) ") })
            #expect(!events(result.events, "failed").contains { $0["class"] as? String == "permanent" })
            let rows = try await run.statusFiles().filter { $0["path"] as? String == waiting }
            #expect(rows.first?["status"] as? String == "pending", "\(rows)")
            let waited = events(result.events, "waiting").filter { $0["path"] as? String == waiting }
            let error = waited.first?["error"] as? String ?? ""
            #expect(error.contains("OUT_OF_MEMORY") && error.contains("head unit full: ") && error.contains("free for this app") && error.contains("waiting (1 file)"), "\(waited)")

            // Larger than all the room the head unit gives the app (it holds none of its files): permanent.
            try await HeadUnitTestEnvironment.withSimulator(["--quota", "100000"]) { empty in
                let big = try HeadUnitCLIRun(sim: empty)
                defer { big.remove() }
                try big.source("huge.bin", HeadUnitFixtures.bytes(150_000, seed: 3))
                let refused = try await big.sync()
                #expect(refused.status == 1, "\(refused.result.output)")
                let failed = events(refused.events, "failed")
                #expect(failed.count == 1 && "\(failed)".contains("FILE_TOO_LARGE"), "\(failed)")
                #expect(failed.first?["class"] as? String == "permanent")
                #expect(empty.rpcLines("PutFile").isEmpty)
            }
        }
    }

    @Test("language: RegisterAppInterface asks for the configured one; a head unit speaking another answers WRONG_LANGUAGE and the files still go; an unknown language is a located config error")
    func language() async throws {
        try await HeadUnitTestEnvironment.withSimulator(["--language", "DE-DE"]) { sim in
            let german = try HeadUnitCLIRun(sim: sim, extra: "    language: de_de")
            defer { german.remove() }
            try german.source("a.txt", Data("hallo".utf8))
            let result = try await german.sync()
            #expect(result.status == 0, "\(result.result.output)")
            #expect(sim.rpcLines("RegisterAppInterface").contains { $0.contains("lang=DE-DE hmi=DE-DE -> SUCCESS") }, "\(sim.rpcLines("RegisterAppInterface"))")

            let english = try HeadUnitCLIRun(sim: sim, extra: "    language: EN-GB\n    hmi_language: FR-FR")
            defer { english.remove() }
            try english.source("b.txt", Data("hello".utf8))
            let other = try await english.run(["sync", "-v"])
            #expect(other.status == 0, "\(other.output)")
            #expect(sim.rpcLines("RegisterAppInterface").contains { $0.contains("lang=EN-GB hmi=FR-FR -> WRONG_LANGUAGE") })
            #expect(other.stderr.contains("the head unit speaks DE-DE and shows DE-DE, not EN-GB / FR-FR as configured; registered anyway"), "\(other.stderr)")
            #expect(try sim.storage.read("b.txt") == Data("hello".utf8))
        }
        let bad = try HeadUnitCLIRun(port: 9, extra: "    language: Klingon")
        defer { bad.remove() }
        let refused = try await bad.run(["validate"])
        #expect(refused.status == 78)
        #expect(refused.stderr.contains("plugins.yaml:") && refused.stderr.contains("destinations[0].language: 'Klingon' is not a language of the SDL spec"), "\(refused.stderr)")
    }

    @Test("syncgate validate accepts the example config and rejects a bad port with its location")
    func validate() async throws {
        try await HeadUnitTestEnvironment.withSimulator { sim in
            let run = try HeadUnitCLIRun(sim: sim)
            defer { run.remove() }
            let ok = try await run.run(["validate"])
            #expect(ok.status == 0, "\(ok.output)")
            let text = try String(contentsOf: run.config, encoding: .utf8).replacingOccurrences(of: "port: \(sim.port)", with: "port: 70000")
            try text.write(to: run.config, atomically: true, encoding: .utf8)
            let bad = try await run.run(["validate"])
            #expect(bad.status == 78, "\(bad.output)")
            #expect(bad.output.contains("port") && bad.output.contains("65535"), "\(bad.output)")
            #expect(sim.log.components(separatedBy: "START-SERVICE").count == 1)  // validate never connects
        }
    }
}
