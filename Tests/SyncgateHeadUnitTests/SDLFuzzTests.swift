import Foundation
import NIOCore
import SyncgateTestSupport
import Testing

@testable import SyncgateSDL

/// Seeded fuzzing of everything that decodes bytes from a head unit: frame headers and the frame parser, message
/// reassembly, BSON, the RPC header and its JSON. Seeds are valid messages; see ``Fuzzer``.
@Suite("SDL decoders under fuzzing")
struct SDLFuzzTests {
    static var seeds: [[UInt8]] {
        let ack = BSONDocument([
            .init("protocolVersion", .string("5.4.0")), .init("hashId", .int32(65537)), .init("mtu", .int64(131_072)),
            .init("videoServiceTransports", .array([.int32(1)])), .init("make", .string("SDL")),
        ]).encoded()
        let json = Array(#"{"filenames":["a.png","b.wav"],"resultCode":"SUCCESS","spaceAvailable":104857533,"success":true}"#.utf8)
        var rpc: [UInt8] = [0x10, 0, 0, 34, 0, 0, 0, 2]
        rpc += withUnsafeBytes(of: UInt32(json.count).bigEndian, Array.init) + json
        let single: [UInt8] = [0x51, 0x07, 0x00, 0x01] + withUnsafeBytes(of: UInt32(rpc.count).bigEndian, Array.init) + [0, 0, 0, 1] + rpc
        let startService: [UInt8] = [0x10, 0x07, 0x01, 0x00, 0, 0, 0, 0x20] + BSONDocument([.init("protocolVersion", .string("5.4.1"))]).encoded()
        let first: [UInt8] = [0x52, 0x07, 0x00, 0x01, 0, 0, 0, 8, 0, 0, 0, 2, 0, 0, 0, 40, 0, 0, 0, 2]
        let consecutive: [UInt8] = [0x53, 0x07, 0x01, 0x01, 0, 0, 0, 20, 0, 0, 0, 2] + Array(repeating: 0x41, count: 20)
        let last: [UInt8] = [0x53, 0x07, 0x00, 0x01, 0, 0, 0, 20, 0, 0, 0, 2] + Array(repeating: 0x42, count: 20)
        return [ack, rpc, single, startService, first + consecutive + last, Array(json)]
    }

    @Test func framesMessagesBSONAndRPCNeverCrash() {
        var fuzzer = Fuzzer("sdl", seeds: Self.seeds, rounds: 40_000)
        let executions = fuzzer.run { bytes in
            _ = try? BSONDocument(decoding: bytes)
            _ = try? RPCMessage(decoding: bytes).parameters()
            var buffer = ByteBuffer(bytes: bytes)
            var assembler = MessageAssembler(maxMessageSize: 1 << 16)
            var frames = 0
            while frames < 64, let frame = try? FrameParser(maxPayload: 1 << 16).next(from: &buffer) {
                _ = try? assembler.add(frame)
                frames += 1
            }
        }
        #expect(executions >= fuzzer.rounds)
    }

    @Test func theRecordedCoreFramesSurviveMutation() throws {
        guard let file = TestPaths.shared("testdata/sdl/core-8.2.0-session.txt"), let text = try? String(contentsOf: file, encoding: .utf8) else {
            return  // ../shared is absent (a user's clone): the synthetic seeds above still run
        }
        var seeds: [[UInt8]] = []
        for line in text.split(separator: "\n") where line.contains("<<") {
            guard let hdr = line.range(of: "hdr="), let bar = line.range(of: "| ") else { continue }
            let header = line[hdr.upperBound...].prefix { $0.isHexDigit }
            let payload = line[bar.upperBound...].prefix { $0.isHexDigit }
            let hex = String(header) + String(payload)
            var bytes: [UInt8] = []
            var index = hex.startIndex
            while let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex), next <= hex.endIndex, index < hex.endIndex {
                if let byte = UInt8(hex[index..<next], radix: 16) { bytes.append(byte) }
                index = next
            }
            seeds.append(bytes)
        }
        #expect(seeds.count >= 10)
        var fuzzer = Fuzzer("sdl-recorded", seeds: seeds, rounds: 10_000)
        fuzzer.run { bytes in
            var buffer = ByteBuffer(bytes: bytes)
            var assembler = MessageAssembler(maxMessageSize: 1 << 18)
            if let frame = try? FrameParser(maxPayload: 1 << 18).next(from: &buffer), let message = try? assembler.add(frame) {
                _ = message
            }
            if bytes.count > 12 {
                _ = try? BSONDocument(decoding: Array(bytes[12...]))
                _ = try? RPCMessage(decoding: Array(bytes[12...])).parameters()
            }
        }
    }
}
