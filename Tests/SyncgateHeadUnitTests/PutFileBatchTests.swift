import Foundation
import NIOCore
import SyncgateCore
@testable import SyncgateHeadUnit
import SyncgateJSON
import SyncgateSDL
import SyncgateTestSupport
import Testing

/// The PutFile path of issue 30: the JSON built once per file and patched per chunk, the answers gathered per batch
/// (``ResponseWindow``), and whole files through it against the simulator at every window size.
@Suite("PutFile JSON template, response window and batched chunks")
struct PutFileBatchTests {
    static let names = ["a", "cover.png", "say \"hi\".wav", #"back\slash.bin"#, "tab\there.json", "Grüße – 音楽.mp3", "\u{1}\u{1f}.bin", String(repeating: "x", count: 255)]
    static let numbers: [Int64] = [0, 1, 9, 10, 99, 100, 131_000, 999_999, 1_000_000, Int64(UInt32.max), 100_000_000_000, Int64.max]
    static let crcs: [UInt32] = [0, 1, 9, 10, 0x7FFF_FFFF, 0x8000_0000, .max]

    @Test("the patched JSON equals the freshly built JSON for edge offsets, lengths, CRCs and names")
    func templateMatchesEncoder() {
        for name in Self.names {
            for fileType in ["BINARY", "GRAPHIC_PNG", "JSON"] {
                for persistent in [false, true] {
                    let template = PutFileTemplate(name: name, fileType: fileType, persistent: persistent)
                    for offset in Self.numbers {
                        for length in Self.numbers.prefix(8) {
                            for crc in Self.crcs {
                                let fresh = RPCParameters.encode(PutFileSender.parameters(
                                    name: name, fileType: fileType, persistent: persistent, offset: offset, length: length, crc: crc))
                                let patched = template.bytes(offset: offset, length: length, crc: crc)
                                #expect(patched == fresh, "\(name) \(offset) \(length) \(crc)")
                                #expect(template.size(offset: offset, length: length, crc: crc) == fresh.count)
                            }
                        }
                    }
                }
            }
        }
    }

    @Test("negative numbers are written as JSON writes them (never sent, but the writer is total)")
    func negativeNumbers() {
        for value in [Int64(-1), -10, -123_456, Int64.min] {
            var buffer = ByteBuffer()
            PutFileTemplate.writeDecimal(value, to: &buffer)
            #expect(String(buffer: buffer) == String(value))
            #expect(PutFileTemplate.digits(value) == String(value).utf8.count)
        }
    }

    @Test("the chunk size leaves room for the largest JSON of the file: every frame fits the MTU")
    func chunkSizeFitsMTU() {
        for size: Int64 in [1, 9, 10, 131_000, 131_071, 50 << 20, 100_000_000_000] {
            for name in Self.names {
                let template = PutFileTemplate(name: name, fileType: "BINARY", persistent: true)
                let worst = RPCParameters.encode(PutFileSender.parameters(
                    name: name, fileType: "BINARY", persistent: true, offset: size, length: size, crc: .max))
                for mtu in [1_024, 1_488, 131_072] {
                    let chunk = PutFileSender.chunkSize(mtu: mtu, template: template, size: size)
                    #expect(chunk == mtu - RPCMessage.headerSize - worst.count)
                    // Any chunk's own JSON is no larger than the worst case.
                    let last = max(0, size - Int64(max(chunk, 1)))
                    let json = template.size(offset: last, length: min(size, Int64(max(chunk, 1))), crc: 12_345)
                    #expect(RPCMessage.headerSize + json + chunk <= mtu)
                }
            }
        }
    }

    static func response(_ code: String, correlation: UInt32 = 1) -> RPCMessage {
        RPCMessage(
            type: .response, functionID: FunctionID.putFile, correlationID: correlation,
            parameters: ["success": .bool(code == "SUCCESS"), "resultCode": .string(code), "spaceAvailable": .int(7)])
    }

    @Test("the window wakes its waiter when the named answer is in, and at once for a failure before it")
    func windowWakes() async throws {
        let window = ResponseWindow()
        window.complete(0, .success(Self.response("SUCCESS")))
        try await window.wait(for: 0)
        #expect(try window.take(0)?.get().spaceAvailable == 7)
        #expect(window.take(0) == nil)
        async let waited: Void = window.wait(for: 3)
        window.complete(1, .success(Self.response("SUCCESS")))
        window.complete(2, .success(Self.response("CORRUPTED_DATA")))
        try await waited
        #expect(window.firstFailure == 2)
        #expect(try window.take(2)?.get().code == .corruptedData)
        #expect(window.firstFailure == nil)
        window.complete(3, .failure(DestinationError.retryable("lost", code: "connection-lost")))
        try await window.wait(for: 9)
        #expect(window.firstFailure == 3)
    }

    @Test("a cancelled wait ends at once with CancellationError")
    func windowCancellation() async throws {
        let window = ResponseWindow()
        let waiting = Task { try await window.wait(for: 5) }
        try await Task.sleep(for: .milliseconds(20))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        // A wait that starts cancelled ends at once too.
        let late = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await window.wait(for: 5)
        }
        await #expect(throws: CancellationError.self) { try await late.value }
    }
}

/// Whole files through the batched path against the simulator: every window size, chunk counts that fill a batch
/// exactly or leave a remainder, and the hash taken on the way.
@Suite(
    "batched PutFiles against the simulator", .serialized,
    .enabled(if: HeadUnitTestEnvironment.simulatorReady, HeadUnitTestEnvironment.simulatorReason))
struct PutFileBatchSimulatorTests {
    @Test("byte-exact files, offsets in order, at windows 1, 2, 3, 8 and 64", arguments: [1, 2, 3, 8, 64])
    func windows(pipeline: Int) async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        try await HeadUnitTestEnvironment.withSimulator { sim in
            let destination = HeadUnitDestination(
                config: HeadUnitConfig(
                    port: sim.port, app: .init(name: "Build Tracker", id: "584421907"),
                    responseTimeout: ConfigDuration(.seconds(20)), pipeline: pipeline))
            // Sizes around multiples of the chunk (about 130,900 bytes at the simulator's 128 KiB MTU).
            for (index, size) in [1, 130_000, 131_072, 4 * 130_930, 9 * 130_930 + 17, 2_500_000].enumerated() {
                let data = HeadUnitFixtures.bytes(size, seed: UInt64(40 + index))
                var item = try files.item("w\(pipeline)/f\(index).bin", data)
                item.sha256 = ""
                let progress = ProgressLog()
                let receipt = try await destination.upload(item) { progress.record($0) }
                #expect(try sim.storage.read(item.remoteName) == data, "\(size) bytes")
                #expect(receipt.sha256 == (try FileHasher.sha256(path: item.absolutePath)))
                #expect(receipt.etag == String(format: "crc32:%08x", CRC32.checksum(data)))
                #expect(progress.all.last == Int64(size) && progress.all == progress.all.sorted())
                let offsets = sim.rpcLines("PutFile").filter { $0.contains("name=\(item.remoteName) ") }.compactMap { line in
                    line.split(separator: " ").first { $0.hasPrefix("offset=") }.flatMap { Int64($0.dropFirst(7)) }
                }
                #expect(offsets == offsets.sorted() && offsets.first == 0 && Set(offsets).count == offsets.count)
            }
            await destination.finish()
        }
    }
}
