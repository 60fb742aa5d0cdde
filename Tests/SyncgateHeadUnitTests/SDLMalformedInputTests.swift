import Foundation
import NIOCore
import SyncgateJSON
import SyncgateSDL
import Testing

@Suite("malformed and oversized SDL input is refused with an error, never a crash")
struct SDLMalformedInputTests {
    func expectSDLError(_ body: () throws -> Void, _ comment: Comment? = nil) {
        do {
            try body()
            Issue.record("expected an SDLError \(comment.map { "\($0)" } ?? "")")
        } catch is SDLError {
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test("bad version, bad frame type, truncated header")
    func badHeaders() {
        expectSDLError { _ = try FrameHeader.decode([0x61, 7, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]) }  // version 6
        expectSDLError { _ = try FrameHeader.decode([0x01, 7, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]) }  // version 0
        expectSDLError { _ = try FrameHeader.decode([0x54, 7, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]) }  // frame type 4
        expectSDLError { _ = try FrameHeader.decode([0x51, 7, 0]) }
        expectSDLError { _ = try FrameHeader.decode([0x11, 7, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1]) }  // v1 header is 8 bytes
    }

    @Test("a frame declaring more than the limit is refused from its header alone")
    func oversizedFrame() throws {
        // Header says 4 GiB - 1; only the 12 header bytes exist. No allocation of the declared size happens.
        var buffer = ByteBuffer(bytes: [0x51, 0x07, 0x00, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 1])
        #expect(throws: SDLError.frameTooLarge(size: 0xFFFF_FFFF, limit: 131_072)) {
            _ = try FrameParser(maxPayload: 131_072).next(from: &buffer)
        }
        var justOver = ByteBuffer(bytes: [0x51, 0x07, 0x00, 0x01, 0x00, 0x02, 0x00, 0x01, 0, 0, 0, 1])
        #expect(throws: SDLError.self) { _ = try FrameParser(maxPayload: 131_072).next(from: &justOver) }
    }

    @Test("a partial frame waits for more bytes and consumes nothing")
    func partialFrame() throws {
        var buffer = ByteBuffer(bytes: [0x51, 0x07, 0x00, 0x01, 0x00, 0x00, 0x00, 0x04, 0, 0, 0, 1, 0xAA])
        #expect(try FrameParser(maxPayload: 100).next(from: &buffer) == nil)
        #expect(buffer.readableBytes == 13)
        buffer.writeBytes([0xBB, 0xCC, 0xDD])
        let frame = try #require(try FrameParser(maxPayload: 100).next(from: &buffer))
        #expect(frame.payload.readableBytes == 4 && buffer.readableBytes == 0)
    }

    @Test("First frames: wrong size, too large a message, bad counts")
    func firstFrames() {
        var assembler = MessageAssembler(maxMessageSize: 1000)
        func first(_ total: UInt32, _ count: UInt32, id: UInt32 = 5) -> SDLFrame {
            var payload = ByteBuffer()
            payload.writeInteger(total)
            payload.writeInteger(count)
            return SDLFrame(
                header: FrameHeader(version: 5, frameType: .first, serviceType: 7, frameInfo: 0, sessionID: 1, dataSize: 8, messageID: id),
                payload: payload)
        }
        expectSDLError { _ = try assembler.add(first(1_000_000, 10)) }
        expectSDLError { _ = try assembler.add(first(0, 1)) }
        expectSDLError { _ = try assembler.add(first(10, 11)) }
        var ninePayloadBytes = ByteBuffer(bytes: [0x52, 0x07, 0x00, 0x01, 0, 0, 0, 9, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 9))
        expectSDLError { _ = try FrameParser(maxPayload: 100).next(from: &ninePayloadBytes) }
    }

    @Test("Consecutive frames: out of sequence, orphaned, overrunning, ending short")
    func consecutiveFrames() throws {
        func first(_ total: UInt32, _ count: UInt32) -> SDLFrame {
            var payload = ByteBuffer()
            payload.writeInteger(total)
            payload.writeInteger(count)
            return SDLFrame(
                header: FrameHeader(version: 5, frameType: .first, serviceType: 7, frameInfo: 0, sessionID: 1, dataSize: 8, messageID: 3),
                payload: payload)
        }
        func consecutive(_ info: UInt8, _ bytes: Int) -> SDLFrame {
            SDLFrame(
                header: FrameHeader(version: 5, frameType: .consecutive, serviceType: 7, frameInfo: info, sessionID: 1, dataSize: 0, messageID: 3),
                payload: ByteBuffer(bytes: [UInt8](repeating: 1, count: bytes)))
        }
        var a = MessageAssembler(maxMessageSize: 100)
        expectSDLError { _ = try a.add(consecutive(1, 10)) }  // no First frame
        _ = try a.add(first(20, 2))
        expectSDLError { _ = try a.add(consecutive(2, 10)) }  // expected 1
        var b = MessageAssembler(maxMessageSize: 100)
        _ = try b.add(first(20, 2))
        expectSDLError { _ = try b.add(consecutive(1, 30)) }  // overruns
        var c = MessageAssembler(maxMessageSize: 100)
        _ = try c.add(first(20, 2))
        _ = try c.add(consecutive(1, 10))
        expectSDLError { _ = try c.add(consecutive(0, 5)) }  // ends at 15 of 20
        var d = MessageAssembler(maxMessageSize: 100)
        _ = try d.add(first(20, 2))
        _ = try d.add(consecutive(1, 10))
        let done = try #require(try d.add(consecutive(0, 10)))
        #expect(done.payload.readableBytes == 20)
        #expect(d.openMessages == 0)
    }

    @Test("too many half-assembled messages at once are refused")
    func tooManyOpen() throws {
        var assembler = MessageAssembler(maxMessageSize: 100, maxInFlight: 2)
        for id in UInt32(1)...3 {
            var payload = ByteBuffer()
            payload.writeInteger(UInt32(50))
            payload.writeInteger(UInt32(2))
            let frame = SDLFrame(
                header: FrameHeader(version: 5, frameType: .first, serviceType: 7, frameInfo: 0, sessionID: 1, dataSize: 8, messageID: id),
                payload: payload)
            if id < 3 { _ = try assembler.add(frame) } else { expectSDLError { _ = try assembler.add(frame) } }
        }
    }

    @Test("BSON: lying lengths, unterminated strings and keys, unknown types, bad booleans, deep nesting, oversize")
    func badBSON() {
        let good = BSONDocument([.init("protocolVersion", .string("5.4.1"))]).encoded()
        expectSDLError { _ = try BSONDocument(decoding: []) }
        expectSDLError { _ = try BSONDocument(decoding: [5, 0, 0]) }
        expectSDLError { _ = try BSONDocument(decoding: [4, 0, 0, 0]) }
        expectSDLError { _ = try BSONDocument(decoding: [0xFF, 0xFF, 0xFF, 0x7F, 0]) }  // claims 2 GiB
        expectSDLError { _ = try BSONDocument(decoding: Array(good.dropLast())) }  // truncated
        var noTerminator = good
        noTerminator[noTerminator.count - 1] = 1
        expectSDLError { _ = try BSONDocument(decoding: noTerminator) }
        var stringTooLong = good
        stringTooLong[21] = 0x7F  // the string's length field
        expectSDLError { _ = try BSONDocument(decoding: stringTooLong) }
        var stringUnterminated = good
        stringUnterminated[stringUnterminated.count - 2] = 0x41
        expectSDLError { _ = try BSONDocument(decoding: stringUnterminated) }
        expectSDLError { _ = try BSONDocument(decoding: [10, 0, 0, 0, 0x13, 0x61, 0, 0, 0, 0]) }  // type 0x13
        expectSDLError { _ = try BSONDocument(decoding: [9, 0, 0, 0, 0x08, 0x61, 0, 2, 0]) }  // bool 2
        expectSDLError { _ = try BSONDocument(decoding: [9, 0, 0, 0, 0x08, 0x61, 0x62, 0x63, 0]) }  // key runs into the end
        expectSDLError { _ = try BSONDocument(decoding: good + [0]) }  // trailing byte
        // 40 levels of nesting.
        var nested = BSONDocument([.init("x", .int32(1))])
        for _ in 0..<40 { nested = BSONDocument([.init("d", .document(nested))]) }
        expectSDLError { _ = try BSONDocument(decoding: nested.encoded()) }
        let big = BSONDocument([.init("s", .string(String(repeating: "a", count: 100_000)))]).encoded()
        expectSDLError { _ = try BSONDocument(decoding: big) }
        #expect((try? BSONDocument(decoding: big, maxSize: 200_000)) != nil)
    }

    @Test("RPC payloads: short, JSON size overrunning, unknown type, bad JSON")
    func badRPC() {
        expectSDLError { _ = try RPCMessage(decoding: [0, 0, 0, 32, 0, 0, 0, 1]) }
        expectSDLError { _ = try RPCMessage(decoding: [0, 0, 0, 32, 0, 0, 0, 1, 0, 0, 1, 0, 0x7B, 0x7D]) }
        expectSDLError { _ = try RPCMessage(decoding: [0x70, 0, 0, 32, 0, 0, 0, 1, 0, 0, 0, 0]) }
        expectSDLError { _ = try RPCMessage(decoding: [0, 0, 0, 32, 0, 0, 0, 1, 0, 0, 0, 1, 0x7B]).parameters() }
        expectSDLError { _ = try RPCParameters.parse(Array("[1,2]".utf8)) }
    }

    @Test("random bytes never crash the frame parser, the assembler, BSON or RPC decoding")
    func fuzz() {
        var generator = SystemRandomNumberGenerator()
        let seeds: [[UInt8]] = [
            BSONDocument([.init("hashId", .int32(7)), .init("mtu", .int64(131_072)), .init("a", .array([.string("x")]))]).encoded(),
            [0x51, 0x07, 0x00, 0x01, 0, 0, 0, 14, 0, 0, 0, 1, 0, 0, 0, 34, 0, 0, 0, 2, 0, 0, 0, 2, 0x7B, 0x7D],
        ]
        for round in 0..<3000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = seeds[round % 4 / 2]
                for _ in 0..<(1 + Int.random(in: 0..<4, using: &generator)) where !bytes.isEmpty {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
            } else {
                bytes = (0..<Int.random(in: 0..<64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            }
            _ = try? BSONDocument(decoding: bytes)
            _ = try? RPCMessage(decoding: bytes).parameters()
            var buffer = ByteBuffer(bytes: bytes)
            var assembler = MessageAssembler(maxMessageSize: 4096)
            while let frame = try? FrameParser(maxPayload: 4096).next(from: &buffer) {
                _ = try? assembler.add(frame)
            }
        }
    }
}
