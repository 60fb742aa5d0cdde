import Foundation
import NIOCore
import SyncgateJSON
import SyncgateSDL
import Testing

/// What a peer controls stays bounded in the codec: the bytes of half-assembled messages together, the values of a
/// JSON document, and the time assembly takes (linear in the message's size, whatever the frame size).
@Suite("SDL codec bounds against a hostile peer")
struct SDLBoundsTests {
    static func first(_ id: UInt32, total: Int, count: Int) -> SDLFrame {
        var payload = ByteBuffer()
        payload.writeInteger(UInt32(total))
        payload.writeInteger(UInt32(count))
        return SDLFrame(
            header: FrameHeader(version: 5, frameType: .first, serviceType: 7, frameInfo: 0, sessionID: 1, dataSize: 8, messageID: id),
            payload: payload)
    }

    static func consecutive(_ id: UInt32, index: Int, last: Bool, _ payload: ByteBuffer) -> SDLFrame {
        SDLFrame(
            header: FrameHeader(
                version: 5, frameType: .consecutive, serviceType: 7, frameInfo: last ? 0 : UInt8((index - 1) % 255 + 1),
                sessionID: 1, dataSize: UInt32(payload.readableBytes), messageID: id),
            payload: payload)
    }

    /// The frames of one `size`-byte message in `frameSize`-byte Consecutive frames (slices of one buffer).
    static func frames(size: Int, frameSize: Int) -> [SDLFrame] {
        let data = ByteBuffer(repeating: 0x5A, count: size)
        let count = (size + frameSize - 1) / frameSize
        var frames = [first(1, total: size, count: count)]
        frames.reserveCapacity(count + 1)
        for index in 1...count {
            let start = (index - 1) * frameSize
            let slice = data.getSlice(at: start, length: min(frameSize, size - start))!
            frames.append(consecutive(1, index: index, last: index == count, slice))
        }
        return frames
    }

    /// CPU seconds of the calling thread (not wall time: other processes on the machine do not count).
    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// CPU seconds to assemble the message (best of three, the frames built beforehand), and the assembled size.
    static func assemblySeconds(_ frames: [SDLFrame]) throws -> (seconds: Double, size: Int) {
        var best = Double.infinity
        var size = 0
        for _ in 0..<3 {
            var assembler = MessageAssembler(maxMessageSize: 16 << 20)
            let started = threadCPUSeconds()
            var message: SDLMessage?
            for frame in frames { message = try assembler.add(frame) ?? message }
            best = min(best, threadCPUSeconds() - started)
            size = message?.payload.readableBytes ?? 0
        }
        return (best, size)
    }

    /// Runs `body` on a thread of its own: seconds of CPU here must not hold one of the few threads of the pool
    /// that the other tests' time limits depend on.
    static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    @Test("a message in 256-byte frames assembles in time linear in its size: 16 times the bytes, about 16 times the time, not 256")
    func assemblyIsLinear() async throws {
        let (one, four, sixteen) = try await Self.onOwnThread {
            (try Self.assemblySeconds(Self.frames(size: 1 << 20, frameSize: 256)),
             try Self.assemblySeconds(Self.frames(size: 4 << 20, frameSize: 256)),
             try Self.assemblySeconds(Self.frames(size: 16 << 20, frameSize: 256)))
        }
        #expect(one.size == 1 << 20 && four.size == 4 << 20 && sixteen.size == 16 << 20)
        let ratio = sixteen.seconds / one.seconds
        print(String(
            format: "assembly in 256-byte frames, CPU: 1 MiB %.3f s, 4 MiB %.3f s, 16 MiB %.3f s; 16 MiB / 1 MiB = %.1f",
            one.seconds, four.seconds, sixteen.seconds, ratio))
        // Linear is 16x; quadratic (each frame copying the buffer so far) is 256x. The bound leaves room for what CPU
        // time still shares with other work on the machine (caches, page faults of the growing buffer).
        #expect(ratio < 64, "1 MiB: \(one.seconds) s, 16 MiB: \(sixteen.seconds) s")
        #expect(sixteen.seconds / four.seconds < 8, "4 MiB: \(four.seconds) s, 16 MiB: \(sixteen.seconds) s (linear 4x, quadratic 16x)")
        // Copying each frame's bytes once is milliseconds per MiB of CPU; a copy of the partial message per frame
        // was 65,536 copies averaging 8 MiB for 16 MiB, minutes.
        #expect(sixteen.seconds < 10)
    }

    @Test("half-assembled messages together hold at most the budget; the peer's excess is an error, not memory")
    func openMessagesShareABudget() throws {
        var assembler = MessageAssembler(maxMessageSize: 4 << 20, maxInFlight: 8, maxBufferedBytes: 8 << 20)
        let chunk = ByteBuffer(repeating: 1, count: 65_536)
        for id in UInt32(1)...8 { _ = try assembler.add(Self.first(id, total: 4 << 20, count: 64)) }
        var heldWhenRefused: Int?
        outer: for index in 1..<64 {
            for id in UInt32(1)...8 {
                let held = assembler.bufferedBytes
                do {
                    _ = try assembler.add(Self.consecutive(id, index: index, last: false, chunk))
                } catch {
                    heldWhenRefused = held
                    #expect("\(error)".contains("8388608"), "\(error)")
                    // The offending message is dropped; the others stay open.
                    #expect(assembler.openMessages == 7 && assembler.bufferedBytes < held)
                    break outer
                }
            }
        }
        // Eight messages of 4 MiB each would be 32 MiB: the budget stops them at 8 MiB.
        #expect(heldWhenRefused == 8 << 20, "\(String(describing: heldWhenRefused))")
        // Sixteen MiB announced is refused from the First frame alone.
        #expect(throws: SDLError.self) { _ = try assembler.add(Self.first(99, total: 16 << 20, count: 256)) }
    }

    @Test("a completed message frees its share of the budget")
    func budgetFreedOnCompletion() throws {
        var assembler = MessageAssembler(maxMessageSize: 1000, maxInFlight: 2, maxBufferedBytes: 1000)
        for round in 0..<5 {
            let id = UInt32(round + 1)
            _ = try assembler.add(Self.first(id, total: 900, count: 2))
            _ = try assembler.add(Self.consecutive(id, index: 1, last: false, ByteBuffer(repeating: 2, count: 800)))
            #expect(assembler.bufferedBytes == 800)
            let done = try assembler.add(Self.consecutive(id, index: 2, last: true, ByteBuffer(repeating: 2, count: 100)))
            #expect(done?.payload.readableBytes == 900)
            #expect(assembler.bufferedBytes == 0 && assembler.openMessages == 0)
        }
    }

    @Test("JSON with more values than any RPC answer holds is refused before it is parsed")
    func jsonValueLimit() throws {
        let many = "{\"filenames\": [" + Array(repeating: "0", count: RPCParameters.maxValues).joined(separator: ",") + "]}"
        #expect(throws: SDLError.self) { _ = try RPCParameters.parse(Array(many.utf8)) }
        // Commas, brackets and braces inside strings are not values.
        let names = (0..<1000).map { "\"file, [{\\\"\($0)\\\"}].png\"" }.joined(separator: ",")
        let listing = try RPCParameters.parse(Array("{\"filenames\": [\(names)], \"spaceAvailable\": 5}".utf8), maxValues: 1100)
        #expect(listing["filenames"]?.array?.count == 1000)
        #expect(listing["filenames"]?.array?.first?.string == "file, [{\"0\"}].png")
    }
}
