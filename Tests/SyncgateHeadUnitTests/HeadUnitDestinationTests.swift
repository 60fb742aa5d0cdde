import Foundation
import SyncgateCore
import SyncgateHeadUnit
import SyncgateSDL
import SyncgateTestSupport
import Testing

/// Drives ``HeadUnitDestination`` against the simulator over real TCP on loopback.
@Suite(
    "head-unit destination against the simulator", .serialized,
    .enabled(if: HeadUnitTestEnvironment.simulatorReady, HeadUnitTestEnvironment.simulatorReason))
struct HeadUnitDestinationTests {
    func expectFailure(
        _ body: () async throws -> Void, code: String, _ failureClass: String, scope: FailureScope = .file,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> DestinationError? {
        do {
            try await body()
            Issue.record("expected \(code)", sourceLocation: sourceLocation)
        } catch let error as DestinationError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            #expect(error.failureClass.name == failureClass, "\(error)", sourceLocation: sourceLocation)
            #expect(error.scope == scope, "\(error)", sourceLocation: sourceLocation)
            return error
        } catch {
            Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    @Test("icons, audio and a 1 MiB file arrive byte-identical, in ordered pipelined chunks")
    func deliversBytes() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        try await HeadUnitTestEnvironment.withSimulator { sim in
            let destination = HeadUnitFixtures.destination(sim)
            let items = [
                try files.item("art/cover.png", HeadUnitFixtures.bytes(5_000, seed: 1), artwork: true),
                try files.item("art/photo.JPG", HeadUnitFixtures.bytes(70_000, seed: 2), artwork: true),
                try files.item("prompts/turn left.wav", HeadUnitFixtures.bytes(200_000, seed: 3)),
                try files.item("prompts/chime.mp3", HeadUnitFixtures.bytes(1, seed: 4)),
                try files.item("data/big.bin", HeadUnitFixtures.bytes(1_048_576, seed: 5)),
                try files.item("data/status.json", Data("{\"ok\":true}".utf8)),
            ]
            #expect(try await destination.prepare(items).isEmpty)
            for (index, planned) in items.enumerated() {
                // Every other item comes without a hash, as a new file does: the plugin hashes what it sends.
                var item = planned
                if index % 2 == 0 { item.sha256 = "" }  // (the 200 KB and 1 MiB files span several chunks)
                let progress = ProgressLog()
                let receipt = try await destination.upload(item) { progress.record($0) }
                let sent = try FileHasher.sha256(path: item.absolutePath)
                #expect(receipt.sha256 == (item.sha256.isEmpty ? sent : nil), "\(item.remoteName)")
                #expect(receipt.remoteName == item.remoteName)
                #expect(progress.all.last == item.size)
                #expect(progress.all == progress.all.sorted())
                let data = try Data(contentsOf: URL(fileURLWithPath: item.absolutePath))
                #expect(receipt.etag == String(format: "crc32:%08x", CRC32.checksum(data)))
                #expect(try sim.storage.read(item.remoteName) == data, "\(item.remoteName)")
            }
            #expect(items.map(\.remoteName) == ["art_cover.png", "art_photo.JPG", "prompts_turn left.wav", "prompts_chime.mp3", "data_big.bin", "data_status.json"])
            let puts = sim.rpcLines("PutFile")
            #expect(puts.contains { $0.contains("name=art_cover.png type=GRAPHIC_PNG") })
            #expect(puts.contains { $0.contains("name=art_photo.JPG type=GRAPHIC_JPEG") })
            #expect(puts.contains { $0.contains("type=AUDIO_WAVE") })
            #expect(puts.contains { $0.contains("type=AUDIO_MP3") })
            #expect(puts.contains { $0.contains("name=data_status.json type=JSON") })
            #expect(puts.contains { $0.contains("name=data_big.bin type=BINARY") })
            // 1 MiB over a 128 KiB MTU: 9 chunks at increasing offsets, all accepted.
            let big = puts.filter { $0.contains("name=data_big.bin") }
            #expect(big.count == 9)
            #expect(big.allSatisfy { $0.hasSuffix("-> SUCCESS") })
            let offsets = big.compactMap { line in line.split(separator: " ").first { $0.hasPrefix("offset=") }.flatMap { Int64($0.dropFirst(7)) } }
            #expect(offsets == offsets.sorted() && offsets.first == 0 && Set(offsets).count == 9)
            let listing = try await destination.list()
            #expect(listing.names == Set(items.map(\.remoteName)))
            let total = items.reduce(Int64(0)) { $0 + $1.size }
            #expect(listing.spaceAvailable == 100 * 1024 * 1024 - total)
            await destination.finish()
            #expect(sim.rpcLines("UnregisterAppInterface").count == 1)
            #expect(sim.log.contains("END-SERVICE hash") && sim.log.contains("-> ACK"))
        }
    }

    @Test("a CRC error is reported retryable, and the next attempt delivers")
    func crcErrorRetried() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        try await HeadUnitTestEnvironment.withSimulator(["--corrupt-puts", "1"]) { sim in
            let destination = HeadUnitFixtures.destination(sim)
            let item = try files.item("a.bin", HeadUnitFixtures.bytes(300_000, seed: 9))
            // The file's own trouble: retryable, scope file (the other files go on).
            let error = await expectFailure({ _ = try await destination.upload(item) { _ in } }, code: "CORRUPTED_DATA", "retryable")
            #expect(error?.message.contains("CRC") == true)
            #expect(error.map { destination.classify($0) } == Classification(.retryable(), scope: .file))
            _ = try await destination.upload(item) { _ in }
            #expect(try sim.storage.read("a.bin") == HeadUnitFixtures.bytes(300_000, seed: 9))
            #expect(sim.rpcLines("PutFile").contains { $0.contains("-> CORRUPTED_DATA") })
            await destination.finish()
        }
    }

    @Test("the connection cut mid-file: retryable, then a new session resends from offset 0")
    func connectionCut() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        try await HeadUnitTestEnvironment.withSimulator(["--cut-after-bytes", "500000"]) { sim in
            let destination = HeadUnitFixtures.destination(sim)
            let item = try files.item("music/album.bin", HeadUnitFixtures.bytes(1_048_576, seed: 11))
            let error = await expectFailure({ _ = try await destination.upload(item) { _ in } }, code: "connection-lost", "retryable")
            #expect(error != nil)
            let progress = ProgressLog()
            _ = try await destination.upload(item) { progress.record($0) }
            #expect(progress.all.first == 0 && progress.all.last == 1_048_576)
            #expect(try sim.storage.read("music_album.bin") == HeadUnitFixtures.bytes(1_048_576, seed: 11))
            #expect(await destination.sessionCount == 2)
            #expect(sim.log.components(separatedBy: "START-SERVICE").count - 1 == 2)
            #expect(sim.log.contains("FAULT cut the connection"))
            // The second session started over at offset 0.
            let puts = sim.rpcLines("PutFile").filter { $0.contains("offset=0 ") }
            #expect(puts.count == 2)
            await destination.finish()
        }
    }

    @Test("level NONE: after 5 new files the head unit refuses; that defers, then the upload waits for FULL")
    func levelNoneWaits() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        // The level rises 1 s after the first refusal, not at a fixed time after registration: on a loaded machine
        // the first 5 uploads could take longer than any fixed time, and the 6th would then not be refused.
        try await HeadUnitTestEnvironment.withSimulator(["--activate-after=-1", "--activate-after-refusal", "1"]) { sim in
            // The wait for a higher level is bounded by the response timeout: long here, so that a loaded machine
            // cannot end it before the simulator raises the level. A wait that ran out would throw; the uploads
            // below succeeding means the plugin woke on FULL.
            let destination = HeadUnitFixtures.destination(sim, responseTimeout: .seconds(20))
            var items: [UploadItem] = []
            for i in 1...7 { items.append(try files.item("n\(i).png", HeadUnitFixtures.bytes(100 + i, seed: UInt64(i)), artwork: true)) }
            for item in items.prefix(5) { _ = try await destination.upload(item) { _ in } }
            let error = await expectFailure({ _ = try await destination.upload(items[5]) { _ in } }, code: "REJECTED", "deferred")
            #expect(error?.message.contains("HMI level NONE") == true)
            // The delivery layer calls again: the plugin now waits for the level to rise instead of burning a try.
            _ = try await destination.upload(items[5]) { _ in }
            _ = try await destination.upload(items[6]) { _ in }
            for item in items { #expect(sim.storage.exists(item.remoteName), "\(item.remoteName)") }
            #expect(sim.log.contains("HMI-LEVEL FULL"))
            await destination.finish()
        }
    }

    @Test("no StartService ACK: the head unit is unavailable (retryable, destination-scoped), bounded by response_timeout")
    func noACK() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        try await HeadUnitTestEnvironment.withSimulator(["--no-ack"]) { sim in
            let destination = HeadUnitFixtures.destination(sim, responseTimeout: .milliseconds(700))
            let item = try files.item("x.png", HeadUnitFixtures.bytes(10, seed: 1))
            let started = ContinuousClock.now
            let error = await expectFailure(
                { _ = try await destination.upload(item) { _ in } }, code: "no-ack", "retryable", scope: .destination)
            #expect(error?.message.contains("no StartService ACK") == true)
            // Bounded by the 700 ms response timeout, not left waiting (generous: the full suite keeps two cores busy).
            #expect(ContinuousClock.now - started < .seconds(30))
            await destination.finish()
        }
    }

    @Test("slow answers: no answer to RegisterAppInterface in time makes the head unit unavailable")
    func responseTimeout() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        // Every RPC answer 8 s late, a response timeout of 3 s: the StartService ACK (not an RPC, not delayed) comes
        // in time even when the machine is loaded (with 500 ms, beside `stress-ng --cpu 4`, it did not once).
        try await HeadUnitTestEnvironment.withSimulator(["--delay-ms", "8000"]) { sim in
            let destination = HeadUnitFixtures.destination(sim, responseTimeout: .seconds(3))
            let item = try files.item("x.png", HeadUnitFixtures.bytes(10, seed: 1))
            let error = await expectFailure(
                { _ = try await destination.upload(item) { _ in } }, code: "timeout", "retryable", scope: .destination)
            #expect(error?.message.contains("RegisterAppInterface") == true, "\(String(describing: error))")
            await destination.finish()
        }
    }

    @Test("result codes: GENERIC_ERROR the file's; OUT_OF_MEMORY and files that do not fit now: the head unit's (they wait); a file larger than all the app's room: permanent")
    func resultCodes() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        try await HeadUnitTestEnvironment.withSimulator(["--generic-errors", "1", "--quota", "100000"]) { sim in
            let destination = HeadUnitFixtures.destination(sim)
            let small = try files.item("small.bin", HeadUnitFixtures.bytes(40_000, seed: 1))
            let second = try files.item("second.bin", HeadUnitFixtures.bytes(40_000, seed: 2))
            let large = try files.item("large.bin", HeadUnitFixtures.bytes(150_000, seed: 3))
            let third = try files.item("third.bin", HeadUnitFixtures.bytes(40_000, seed: 4))
            let rejected = try await destination.prepare([small, second, large, third])
            #expect(Set(rejected.keys) == ["large.bin", "third.bin"])
            // 150,000 bytes against a head unit that holds nothing of the app and offers 100,000: it can never fit.
            #expect(rejected["large.bin"]?.code == "FILE_TOO_LARGE")
            #expect(rejected["large.bin"]?.classification == Classification(.permanent, scope: .file))
            // 40,000 bytes would fit an empty head unit, but not beside the two files before it: it waits.
            #expect(rejected["third.bin"]?.code == "OUT_OF_MEMORY")
            #expect(rejected["third.bin"]?.classification == Classification(.retryable(), scope: .destination))
            #expect(rejected["third.bin"]?.message.hasPrefix("head unit full: ") == true && rejected["third.bin"]?.message.contains("files wait") == true)
            _ = await expectFailure({ _ = try await destination.upload(small) { _ in } }, code: "GENERIC_ERROR", "retryable")
            _ = try await destination.upload(small) { _ in }
            _ = try await destination.upload(second) { _ in }
            // Sent anyway (as if prepare had not been asked): the head unit is full, which is about all its files.
            let full = await expectFailure(
                { _ = try await destination.upload(third) { _ in } }, code: "OUT_OF_MEMORY", "retryable", scope: .destination)
            #expect(full?.message.contains("no space left") == true)
            await destination.finish()
        }
    }

    @Test("empty files, bad names and colliding names fail alone and clearly")
    func localRefusals() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        try await HeadUnitTestEnvironment.withSimulator { sim in
            let destination = HeadUnitFixtures.destination(sim)
            let empty = try files.item("empty.png", Data())
            let a = try files.item("a/b.png", HeadUnitFixtures.bytes(10, seed: 1))
            let b = try files.item("a_b.png", HeadUnitFixtures.bytes(10, seed: 2))
            let fine = try files.item("fine.png", HeadUnitFixtures.bytes(10, seed: 3))
            let rejected = try await destination.prepare([empty, a, b, fine])
            #expect(rejected["empty.png"]?.code == "EMPTY_FILE")
            #expect(rejected["a_b.png"]?.code == "NAME_COLLISION")
            #expect(rejected["a_b.png"]?.message.contains("\"a/b.png\"") == true)
            #expect(rejected["a_b.png"]?.message.contains("\"a_b.png\"") == true)
            #expect(rejected["fine.png"] == nil)
            _ = await expectFailure({ _ = try await destination.upload(empty) { _ in } }, code: "EMPTY_FILE", "permanent")
            var slash = fine
            slash.remoteName = "x/y.png"
            _ = await expectFailure({ _ = try await destination.upload(slash) { _ in } }, code: "INVALID_NAME", "permanent")
            #expect(sim.rpcLines("PutFile").isEmpty)
            await destination.finish()
        }
    }

    @Test("delete: present file removed, missing file a clear permanent error")
    func deletes() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        try await HeadUnitTestEnvironment.withSimulator { sim in
            let destination = HeadUnitFixtures.destination(sim)
            let item = try files.item("gone.png", HeadUnitFixtures.bytes(10, seed: 1))
            _ = try await destination.upload(item) { _ in }
            try await destination.delete(remoteName: "gone.png")
            #expect(!sim.storage.exists("gone.png"))
            #expect(try await !destination.list().names.contains("gone.png"))
            let error = await expectFailure({ try await destination.delete(remoteName: "gone.png") }, code: "FILE_NOT_FOUND", "permanent")
            #expect(error?.message.contains("gone.png") == true)
            await destination.finish()
        }
    }

    @Test("a head unit that answers protocol 4 works; heartbeats are answered")
    func protocolFourAndHeartbeats() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        try await HeadUnitTestEnvironment.withSimulator(["--protocol-version", "4", "--heartbeat-interval", "0.2"]) { sim in
            let destination = HeadUnitFixtures.destination(sim)
            let item = try files.item("v4.bin", HeadUnitFixtures.bytes(400_000, seed: 4))
            _ = try await destination.upload(item) { _ in }
            #expect(try sim.storage.read("v4.bin") == HeadUnitFixtures.bytes(400_000, seed: 4))
            // A heartbeat every 0.2 s: wait (up to 10 s, for a loaded machine) until two have been answered.
            var stats = ""
            var acks = 0
            let deadline = ContinuousClock.now + .seconds(10)
            while acks < 2, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                stats = try sim.control("stats")
                acks = stats.split(separator: " ").first { $0.hasPrefix("heartbeat_acks=") }.flatMap { Int($0.dropFirst(15)) } ?? 0
            }
            #expect(acks >= 2, "\(stats)")
            await destination.finish()
            #expect(sim.log.contains("END-SERVICE hash"))
        }
    }

    @Test("the configured icon is uploaded once and set with SetAppIcon")
    func appIcon() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        let icon = try files.folder.write("icons/app.png", HeadUnitFixtures.bytes(3_000, seed: 77))
        try await HeadUnitTestEnvironment.withSimulator { sim in
            let destination = HeadUnitFixtures.destination(sim, icon: icon.path)
            #expect(try await destination.list().names.contains("app.png"))
            #expect(try sim.storage.read("app.png") == HeadUnitFixtures.bytes(3_000, seed: 77))
            #expect(sim.rpcLines("SetAppIcon").first?.hasSuffix("-> SUCCESS") == true)
            await destination.finish()
            // A second session finds it there: no new PutFile, SetAppIcon again.
            let again = HeadUnitFixtures.destination(sim, icon: icon.path)
            _ = try await again.list()
            #expect(sim.rpcLines("PutFile").count == 1)
            #expect(sim.rpcLines("SetAppIcon").count == 2)
            await again.finish()
        }
    }

    @Test("ignition off: the non-persistent file is gone and the next listing says so")
    func ignitionOff() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        try await HeadUnitTestEnvironment.withSimulator { sim in
            let destination = HeadUnitFixtures.destination(sim, persistent: false)
            let item = try files.item("volatile.png", HeadUnitFixtures.bytes(100, seed: 1))
            _ = try await destination.upload(item) { _ in }
            #expect(try await destination.list().names.contains("volatile.png"))
            #expect(try sim.control("ignition-off") == "ok dropped 1")
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await !destination.list().names.contains("volatile.png"))
            #expect(await destination.sessionCount == 2)
            await destination.finish()
        }
    }

    @Test("the head unit drops the registration: the next call registers again (notified or not)")
    func reRegisters() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        try await HeadUnitTestEnvironment.withSimulator { sim in
            let destination = HeadUnitFixtures.destination(sim)
            _ = try await destination.upload(try files.item("one.png", HeadUnitFixtures.bytes(100, seed: 1))) { _ in }
            #expect(try sim.control("unregister") == "ok")
            try await Task.sleep(for: .milliseconds(200))
            _ = try await destination.upload(try files.item("two.png", HeadUnitFixtures.bytes(100, seed: 2))) { _ in }
            #expect(await destination.sessionCount == 2)
            #expect(try sim.control("unregister silently") == "ok")
            try await Task.sleep(for: .milliseconds(200))
            let three = try files.item("three.png", HeadUnitFixtures.bytes(100, seed: 3))
            _ = await expectFailure({ _ = try await destination.upload(three) { _ in } }, code: "APPLICATION_NOT_REGISTERED", "retryable")
            _ = try await destination.upload(three) { _ in }
            #expect(await destination.sessionCount == 3)
            for name in ["one.png", "two.png", "three.png"] { #expect(sim.storage.exists(name)) }
            await destination.finish()
        }
    }

    @Test("a small MTU: chunks shrink to fit, and a ListFiles answer spread over First/Consecutive frames is reassembled")
    func smallMTU() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        let preloaded = (1...100).map { String(format: "preloaded-file-with-a-longish-name-%03d.bin", $0) }
        try await HeadUnitTestEnvironment.withSimulator(["--mtu", "2048"], prepare: { storage in
            for name in preloaded { try storage.write(name, Data([1])) }
        }) { sim in
            let destination = HeadUnitFixtures.destination(sim)
            let item = try files.item("small-mtu.bin", HeadUnitFixtures.bytes(50_000, seed: 21))
            _ = try await destination.upload(item) { _ in }
            #expect(try sim.storage.read("small-mtu.bin") == HeadUnitFixtures.bytes(50_000, seed: 21))
            let puts = sim.rpcLines("PutFile")
            #expect(puts.count >= 26 && puts.allSatisfy { $0.hasSuffix("-> SUCCESS") }, "\(puts.count) PutFiles")
            let listing = try await destination.list()
            #expect(listing.names == Set(preloaded + ["small-mtu.bin"]))
            await destination.finish()
        }
    }

    @Test("finish does not wait out a head unit that stopped answering: about a second in all")
    func finishIsBounded() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        try await HeadUnitTestEnvironment.withSimulator { sim in
            let destination = HeadUnitFixtures.destination(sim, responseTimeout: .seconds(30))
            _ = try await destination.upload(try files.item("f.png", HeadUnitFixtures.bytes(10, seed: 1))) { _ in }
            #expect(try sim.control("delay 90000") == "ok")
            let started = ContinuousClock.now
            await destination.finish()
            // UnregisterAppInterface and EndService share a budget of 1 s, against the 90 s the head unit would
            // take; the bound is a third of that (a busy full run once stretched the 1 s to 11 s).
            #expect(ContinuousClock.now - started < .seconds(30))
            #expect(sim.rpcLines("UnregisterAppInterface").count == 1)
        }
    }

    @Test("a head unit that answers with a frame announcing 4 GiB: a protocol error, no crash, no huge allocation")
    func hostileFrame() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        for answer in [
            [0x50, 0x07, 0x02, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0] as [UInt8],  // oversized ACK
            [0x70, 0x07, 0x02, 0x01, 0, 0, 0, 0, 0, 0, 0, 0],  // protocol version 7
            [0x50, 0x07, 0x02, 0x01, 0, 0, 0, 5, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0x7F, 0],  // ACK with lying BSON
        ] {
            let peer = try HeadUnitHostilePeer(answer: answer)
            defer { peer.stop() }
            let destination = HeadUnitDestination(
                config: HeadUnitConfig(
                    port: peer.port, app: .init(name: "Build Tracker", id: "1"),
                    connectTimeout: ConfigDuration(.seconds(30)), responseTimeout: ConfigDuration(.seconds(30))))
            let item = try files.item("x.png", HeadUnitFixtures.bytes(10, seed: 1))
            let started = ContinuousClock.now
            _ = await expectFailure(
                { _ = try await destination.upload(item) { _ in } }, code: "protocol-error", "retryable", scope: .destination)
            // At once on the bad frame, not at a timeout (30 s); the margin is for a machine busy with other tests.
            #expect(ContinuousClock.now - started < .seconds(15))
            await destination.finish()
        }
    }
}
