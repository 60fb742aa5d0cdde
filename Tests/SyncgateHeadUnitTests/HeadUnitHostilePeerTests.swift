import Foundation
import SyncgateCore
import SyncgateHeadUnit
import SyncgateTestSupport
import Testing

/// Issue 20 at the plugin level: scripted head units that flood, hold half-sent messages open, or cut a large
/// message into tiny frames. Each run ends within its time limits with a clear error (memory is measured on the
/// real binary, in HeadUnitHostileCLITests).
@Suite("hostile head units against the plugin", .serialized)
struct HeadUnitHostilePeerTests {
    @Test("heartbeats flooded without reading: the set-up still ends at response_timeout, unavailable")
    func heartbeatFlood() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        let sent = HeadUnitPeerScripts.Counter()
        let peer = try HeadUnitHostilePeer(receiveBuffer: 4096) { HeadUnitPeerScripts.floodHeartbeats($0, sent: sent) }
        defer { peer.stop() }
        let destination = HeadUnitFixtures.destination(port: peer.port, responseTimeout: .seconds(2))
        let item = try files.item("a.png", HeadUnitFixtures.bytes(100, seed: 1))
        let upload = await HeadUnitFixtures.outcome { _ = try await destination.upload(item) { _ in } }
        let error = upload.error as? DestinationError
        #expect(error?.code == "no-ack" && error?.scope == .destination, "\(String(describing: upload.error))")
        // Bounded (a flood never ends); generous for the full suite's first minute, which has held every test up for 46 s.
        #expect(upload.elapsed < .seconds(300), "\(upload.elapsed)")
        print("heartbeat flood: the peer got \(sent.value / 1_048_576) MiB of heartbeats into the gateway in \(upload.elapsed)")
        #expect(sent.value > 1 << 20, "the flood never got going: \(sent.value) bytes")
        await destination.finish()
    }

    @Test("eight half-sent 4 MiB messages held open: refused at 8 MiB in all, unavailable; 16 MiB ones from the First frame")
    func partialMessages() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        for size in [4 << 20, 16 << 20] {
            let sent = HeadUnitPeerScripts.Counter()
            let peer = try HeadUnitHostilePeer { HeadUnitPeerScripts.holdPartialMessages($0, count: 8, size: size, sent: sent) }
            defer { peer.stop() }
            // The refusal comes from the bytes, not from a clock: a response timeout well above what a loaded machine
            // may take to read 8 MiB keeps it from ending the test first (it did once, in a full run on 2 busy cores).
            let destination = HeadUnitFixtures.destination(port: peer.port, responseTimeout: .seconds(30))
            let item = try files.item("a.png", HeadUnitFixtures.bytes(100, seed: 1))
            let upload = await HeadUnitFixtures.outcome { _ = try await destination.upload(item) { _ in } }
            let error = upload.error as? DestinationError
            #expect(error?.code == "protocol-error" && error?.scope == .destination, "\(String(describing: upload.error))")
            #expect(upload.elapsed < .seconds(300), "\(upload.elapsed)")  // bounded (a flood never ends); generous for the full suite's first minute
            print("\(size >> 20) MiB partial messages: refused after the peer sent \(sent.value >> 10) KiB: \(error?.message ?? "-")")
            // Refused by the byte count, not by anything else: for 4 MiB messages, once the open ones held 8 MiB
            // together; a 16 MiB one from its First frame, over the 4 MiB a message may have.
            let limit = size == 4 << 20 ? "open multi-frame messages would hold more than 8388608 bytes together" : "exceeds the limit of 4194304"
            #expect(error?.message.contains(limit) == true, "\(error?.message ?? "-")")
            // And before the peer could send all it had (8 x size): what it sent is what the gateway read (8 MiB for 4 MiB
            // messages) plus what the two sockets' buffers took in meanwhile. Those grow while the gateway is slow to
            // read: 8.2 MiB once, with the suite beside `stress-ng --cpu 4` (so "under 16 MiB" failed).
            #expect(sent.value < 8 * size, "\(sent.value)")
            await destination.finish()
        }
    }

    @Test("a 4 MiB message in 256-byte frames is taken in (and ignored) within seconds; the session goes on")
    func largeMessageInTinyFrames() async throws {
        let files = try HeadUnitFixtures()
        defer { files.remove() }
        let reachedRegistration = HeadUnitPeerScripts.Counter()
        let peer = try HeadUnitHostilePeer { socket in
            if HeadUnitPeerScripts.largeMessageThenACK(socket, size: 4 << 20, frameSize: 256) { reachedRegistration.add(1) }
        }
        defer { peer.stop() }
        let destination = HeadUnitFixtures.destination(port: peer.port, responseTimeout: .seconds(30))
        let item = try files.item("a.png", HeadUnitFixtures.bytes(100, seed: 1))
        let upload = await HeadUnitFixtures.outcome { _ = try await destination.upload(item) { _ in } }
        // The peer closes after the gateway asks to register: the upload fails, as the link dropped while starting.
        #expect((upload.error as? DestinationError)?.scope == .destination, "\(String(describing: upload.error))")
        #expect(reachedRegistration.value == 1)
        print("4 MiB in 16,384 frames of 256 bytes, then the session set-up: \(upload.elapsed)")
        #expect(upload.elapsed < .seconds(20), "\(upload.elapsed)")
        await destination.finish()
    }
}
