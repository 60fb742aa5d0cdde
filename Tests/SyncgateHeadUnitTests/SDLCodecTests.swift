import Foundation
import NIOCore
import SyncgateJSON
import SyncgateSDL
import SyncgateTestSupport
import Testing

private let needsShared: Comment = "needs ../shared: testdata/sdl/core-8.2.0-session.txt (the recorded Core session)"

@Suite("SDL frames, BSON and RPC against the frames of a real SDL Core 8.2.0")
struct SDLCodecTests {

    @Test("every recorded header decodes and encodes back to the same bytes", .enabled(if: SessionRecording.available, needsShared))
    func headersRoundTrip() throws {
        let recording = try SessionRecording.load()
        #expect(recording.frames.count > 40)
        for frame in recording.frames {
            let header = try FrameHeader.decode(frame.header)
            #expect(header.bytes == frame.header)
            #expect(Int(header.dataSize) == frame.payload.count + frame.missing, "\(header)")
            #expect(header.size == (header.version == 1 ? 8 : 12))
        }
        // The first frame is StartService with a v1 header on session 0.
        let start = try FrameHeader.decode(recording.frames[0].header)
        #expect(start.version == 1 && start.frameType == .control && start.frameInfo == ControlFrameInfo.startService)
        #expect(start.serviceType == ServiceType.rpc && start.sessionID == 0)
    }

    @Test("StartService BSON: ours is byte-identical to the recorded request", .enabled(if: SessionRecording.available, needsShared))
    func startServiceBSON() throws {
        let recording = try SessionRecording.load()
        let payload = recording.frames[0].payload
        let doc = try BSONDocument(decoding: payload)
        #expect(doc["protocolVersion"] == .string("5.4.1"))
        #expect(BSONDocument([.init("protocolVersion", .string("5.4.1"))]).encoded() == payload)
    }

    @Test("Core's StartService ACK: v5, session 1, BSON with hashId (int32) and mtu (int64)", .enabled(if: SessionRecording.available, needsShared))
    func startServiceACK() throws {
        let recording = try SessionRecording.load()
        let ack = recording.frames[1]
        let frame = try FrameParser(maxPayload: 131_072).parseOne(ack.header + ack.payload)
        #expect(frame.header.version == 5 && frame.header.frameInfo == ControlFrameInfo.startServiceACK)
        #expect(frame.header.sessionID == 1 && frame.header.messageID == 0)
        let doc = try BSONDocument(decoding: frame.payload)
        #expect(doc["protocolVersion"] == .string("5.4.0"))
        #expect(doc["hashId"] == .int32(65537))
        #expect(doc["mtu"] == .int64(131_072))
        #expect(doc["make"] == .string("SDL"))
        #expect(doc["videoServiceTransports"] == .array([.int32(1)]))
        #expect(doc["secondaryTransports"] == .array([]))
        // Key order is kept, so re-encoding reproduces Core's bytes exactly.
        #expect(doc.encoded() == ack.payload)
    }

    @Test("every complete Core frame decodes to an RPC whose JSON parses", .enabled(if: SessionRecording.available, needsShared))
    func coreRPCs() throws {
        let recording = try SessionRecording.load()
        let parser = FrameParser(maxPayload: 131_072)
        var responses: [UInt32: RPCMessage] = [:]
        var notifications: [UInt32] = []
        for frame in recording.frames where !frame.outbound && frame.missing == 0 {
            let parsed = try parser.parseOne(frame.header + frame.payload)
            guard parsed.header.frameType == .single else { continue }
            #expect(parsed.header.serviceType == ServiceType.rpc)
            let rpc = try RPCMessage(decoding: parsed.payload)
            _ = try rpc.parameters()
            if rpc.type == .response { responses[rpc.correlationID] = rpc } else { notifications.append(rpc.functionID) }
        }
        #expect(responses.keys.sorted() == Array(1...21).map(UInt32.init))
        #expect(notifications.filter { $0 == FunctionID.onHMIStatus }.count == 2)
        let expected = try SessionRecording.recordedResponses()
        for (corr, answer) in expected {
            let params = try #require(try responses[corr]?.parameters(), "no response \(corr)")
            #expect(params["resultCode"] == answer["resultCode"], "corr \(corr)")
            #expect(params["success"] == answer["success"], "corr \(corr)")
            #expect(params["spaceAvailable"] == answer["spaceAvailable"], "corr \(corr)")
        }
        #expect(try responses[19]!.parameters()["resultCode"] == .string("REJECTED"))
        #expect(responses[3]!.functionID == FunctionID.putFile)
        #expect(responses[15]!.functionID == FunctionID.setAppIcon)
    }

    @Test("PutFile CRCs: zlib's CRC-32 of the bulk matches every recorded crc", .enabled(if: SessionRecording.available, needsShared))
    func putFileCRCs() throws {
        let frames = try SessionRecording.load().completed()
        var checked = 0
        var mismatched: [String] = []
        var assembler = MessageAssembler(maxMessageSize: 1 << 20)
        for frame in frames where frame.outbound {
            let parsed = try FrameParser(maxPayload: 131_072).parseOne(frame.header + frame.payload)
            guard let message = try assembler.add(parsed), !message.isControl else { continue }
            let rpc = try RPCMessage(decoding: message.payload)
            guard rpc.functionID == FunctionID.putFile, let crc = try rpc.parameters()["crc"]?.int64 else { continue }
            let name = try rpc.parameters()["syncFileName"]?.string ?? "?"
            if CRC32.checksum(rpc.bulk.readableBytesView) == UInt32(crc) { checked += 1 } else { mismatched.append(name) }
        }
        #expect(checked == 5)  // hello.txt, the three big.bin chunks, multiframe.bin
        #expect(mismatched == ["badcrc.txt"])
    }

    @Test("the multi-frame PutFile: reassembled, and our fragmenter cuts it exactly as recorded", .enabled(if: SessionRecording.available, needsShared))
    func multiFrame() throws {
        let frames = try SessionRecording.completed(try SessionRecording.load())
        let group = try frames.filter { try $0.outbound && $0.decoded.messageID == 13 }
        #expect(group.count == 3)
        var assembler = MessageAssembler(maxMessageSize: 1 << 20)
        var message: SDLMessage?
        for frame in group {
            message = try assembler.add(try FrameParser(maxPayload: 131_072).parseOne(frame.header + frame.payload))
        }
        let whole = try #require(message)
        #expect(whole.payload.readableBytes == 204_882)
        let rpc = try RPCMessage(decoding: whole.payload)
        #expect(rpc.bulk.readableBytes == 204_800)
        #expect(try rpc.parameters()["syncFileName"] == .string("multiframe.bin"))
        let again = MessageFragmenter.frames(
            version: 5, serviceType: ServiceType.bulk, sessionID: 1, messageID: 13, payload: whole.payload, maxPayload: 131_072)
        #expect(again.map(\.bytes) == group.map { $0.header + $0.payload })
    }

    @Test("CRC-32 check values")
    func crcValues() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum(Array("hello world\n".utf8)) == 2_936_552_237)
        #expect(CRC32.checksum([UInt8]()) == 0)
        var running = CRC32()
        let data = (0..<10_000).map { UInt8($0 % 253) }
        running.update(data[0..<3333])
        running.update(data[3333...])
        #expect(running.value == CRC32.checksum(data))
        for split in [0, 1, 7, 8, 3333, 9_999, 10_000] {
            let a = CRC32.checksum(data[0..<split])
            let b = CRC32.checksum(data[split...])
            #expect(CRC32.combine(a, b, length: 10_000 - split) == CRC32.checksum(data), "split \(split)")
        }
    }

    @Test("headers of every version round-trip")
    func headerVersions() throws {
        for version in UInt8(1)...5 {
            for type in [FrameType.control, .single, .first, .consecutive] {
                let header = FrameHeader(
                    version: version, encrypted: version == 5, frameType: type, serviceType: 0x0F, frameInfo: 7,
                    sessionID: 9, dataSize: 1234, messageID: 77)
                let decoded = try FrameHeader.decode(header.bytes)
                #expect(decoded == header)
                #expect(decoded.messageID == (version == 1 ? 0 : 77))
            }
        }
    }

    @Test("BSON round-trips every supported type")
    func bsonRoundTrip() throws {
        let doc = BSONDocument([
            .init("s", .string("héllo")), .init("i", .int32(-5)), .init("l", .int64(1 << 40)), .init("d", .double(2.5)),
            .init("b", .bool(true)), .init("n", .null), .init("a", .array([.int32(1), .string("x")])),
            .init("o", .document(BSONDocument([.init("k", .bool(false))]))),
        ])
        #expect(try BSONDocument(decoding: doc.encoded()) == doc)
    }
}

extension SessionRecording {
    static func completed(_ recording: SessionRecording) throws -> [Frame] { try recording.completed() }
}
