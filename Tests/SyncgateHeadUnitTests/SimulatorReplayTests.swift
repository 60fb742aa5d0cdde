import Foundation
import NIOCore
import SyncgateJSON
import SyncgateSDL
import SyncgateTestSupport
import Testing

/// Replays the requests of the recorded session with a real SDL Core 8.2.0 against the simulator, byte for
/// byte, and compares the simulator's answers (result codes, info, spaceAvailable, file names) with Core's.
@Suite("the head-unit simulator answers the recorded session like SDL Core 8.2.0")
struct SimulatorReplayTests {
    /// The 67-byte PNG the recorded client uploaded as icon.png (Core already held it when the session began).
    static func recordedIcon(_ frames: [SessionRecording.Frame]) throws -> [UInt8] {
        for frame in frames where frame.outbound && frame.note == "PutFile" {
            let rpc = try RPCMessage(decoding: Array(frame.payload))
            if try rpc.parameters()["syncFileName"] == .string("icon.png") { return Array(rpc.bulk.readableBytesView) }
        }
        throw SessionRecording.RecordingError("no icon.png in the recording")
    }

    /// Reads frames from the simulator until `match` accepts one (notifications and others are skipped).
    func readUntil(
        _ client: HeadUnitRawClient, _ what: String, _ match: (FrameHeader, SDLMessage) throws -> Bool
    ) throws -> SDLMessage {
        var assembler = MessageAssembler(maxMessageSize: 1 << 20)
        for _ in 0..<50 {
            guard let (header, payload) = client.readFrame() else {
                throw SessionRecording.RecordingError("the simulator sent nothing while waiting for \(what)")
            }
            let frame = try FrameParser(maxPayload: 1 << 20).parseOne(header + payload)
            guard let message = try assembler.add(frame) else { continue }
            if try match(frame.header, message) { return message }
        }
        throw SessionRecording.RecordingError("no \(what) within 50 frames")
    }

    @Test(
        "replay: same result codes, info, spaceAvailable and file names as Core",
        .enabled(if: SessionRecording.available, "needs ../shared: testdata/sdl (the recorded Core session)"),
        .enabled(if: HeadUnitTestEnvironment.simulatorReady, HeadUnitTestEnvironment.simulatorReason))
    func replay() async throws {
        let frames = try SessionRecording.load().completed()
        let answers = try SessionRecording.recordedResponses()
        let icon = try Self.recordedIcon(frames)
        #expect(icon.count == 67)
        try await HeadUnitTestEnvironment.withSimulator(["--no-ui"], prepare: { try $0.write("icon.png", Data(icon)) }) { sim in
            let client = try HeadUnitRawClient(port: sim.port)
            var hashID: Int64 = 0
            var compared = 0
            for (index, frame) in frames.enumerated() {
                let header = try frame.decoded
                if frame.outbound {
                    var payload = frame.payload
                    if header.frameType == .control && header.frameInfo == ControlFrameInfo.endService {
                        // The session's hash id is the simulator's, not the recorded Core's.
                        payload = BSONDocument([.init("hashId", .int32(Int32(hashID)))]).encoded()
                        var patched = header
                        patched.dataSize = UInt32(payload.count)
                        try client.send(patched.bytes + payload)
                    } else {
                        try client.send(frame.header + payload)
                    }
                    continue
                }
                // An answer Core gave: wait for the simulator's counterpart.
                if header.frameType == .control {
                    let message = try readUntil(client, ControlFrameInfo.name(header.frameInfo)) { h, _ in
                        h.frameType == .control && h.frameInfo == header.frameInfo
                    }
                    #expect(message.version == header.version && message.sessionID == header.sessionID)
                    if header.frameInfo == ControlFrameInfo.startServiceACK {
                        let ours = try BSONDocument(decoding: message.payload)
                        let core = try BSONDocument(decoding: frame.payload)
                        #expect(ours["protocolVersion"] == core["protocolVersion"])
                        #expect(ours["mtu"] == core["mtu"])
                        guard case .int32(let hash) = ours["hashId"] else {
                            Issue.record("hashId is not an int32: \(ours)")
                            return
                        }
                        hashID = Int64(hash)
                    }
                    compared += 1
                    continue
                }
                let core = UInt32(frame.payload[4]) << 24 | UInt32(frame.payload[5]) << 16 | UInt32(frame.payload[6]) << 8 | UInt32(frame.payload[7])
                let word = UInt32(frame.payload[0]) << 24 | UInt32(frame.payload[1]) << 16 | UInt32(frame.payload[2]) << 8 | UInt32(frame.payload[3])
                if word >> 28 == 2 {
                    // A notification: only OnHMIStatus matters; wait for the same level.
                    guard word & 0x0FFF_FFFF == FunctionID.onHMIStatus, frame.missing == 0 else { continue }
                    let level = try RPCMessage(decoding: frame.payload).parameters()["hmiLevel"]
                    _ = try readUntil(client, "OnHMIStatus \(level ?? .null)") { _, message in
                        let rpc = try RPCMessage(decoding: message.payload)
                        let seen = try rpc.parameters()["hmiLevel"]
                        return rpc.type == .notification && rpc.functionID == FunctionID.onHMIStatus && seen == level
                    }
                    compared += 1
                    continue
                }
                let ours = try readUntil(client, "response \(core)") { _, message in
                    let rpc = try RPCMessage(decoding: message.payload)
                    return rpc.type == .response && rpc.correlationID == core
                }
                let rpc = try RPCMessage(decoding: ours.payload)
                let params = try rpc.parameters()
                #expect(rpc.functionID == word & 0x0FFF_FFFF, "corr \(core)")
                if let expected = answers[core] {
                    var mine = params
                    var theirs = expected
                    if let names = mine["filenames"]?.array { mine["filenames"] = .array(names.sorted { "\($0)" < "\($1)" }) }
                    if let names = theirs["filenames"]?.array { theirs["filenames"] = .array(names.sorted { "\($0)" < "\($1)" }) }
                    #expect(mine == theirs, "corr \(core) (frame \(index)): simulator \(mine) vs Core \(theirs)")
                } else {
                    // RegisterAppInterface: Core's answer is long; compare what matters.
                    #expect(params["resultCode"] == .string("SUCCESS") && params["success"] == .bool(true), "corr \(core)")
                }
                compared += 1
            }
            #expect(compared == 25)  // 2 control answers, 2 OnHMIStatus, 21 responses
            // What Core held at the end, the simulator holds too, byte for byte.
            #expect(try sim.storage.read("big.bin") == Data(SessionRecording.pattern("big.bin", offset: 0, count: 300_000)))
            #expect(try sim.storage.read("multiframe.bin") == Data(SessionRecording.pattern("multiframe.bin", offset: 0, count: 204_800)))
            #expect(try sim.storage.read("icon.png") == Data(icon))
            #expect(!sim.storage.exists("hello.txt"))
            #expect(!sim.storage.exists("gap.bin") && !sim.storage.exists("badcrc.txt") && !sim.storage.exists("nodata.txt"))
        }
    }

    @Test(
        "faults: no ACK, malformed frames disconnect, heartbeat answered",
        .enabled(if: HeadUnitTestEnvironment.simulatorReady, HeadUnitTestEnvironment.simulatorReason))
    func simulatorFaults() async throws {
        let start = SDLFrame.control(
            version: 1, serviceType: ServiceType.rpc, info: ControlFrameInfo.startService, sessionID: 0, messageID: 0,
            payload: BSONDocument([.init("protocolVersion", .string("5.4.1"))]).encodedBuffer())
        try await HeadUnitTestEnvironment.withSimulator(["--no-ack"]) { sim in
            let client = try HeadUnitRawClient(port: sim.port, timeout: 1)
            try client.send(start.bytes)
            #expect(client.readFrame() == nil)  // nothing within a second
            #expect(sim.log.contains("FAULT no StartService ACK"))
        }
        try await HeadUnitTestEnvironment.withSimulator() { sim in
            let client = try HeadUnitRawClient(port: sim.port, timeout: 3)
            try client.send(start.bytes)
            let ack = try #require(client.readFrame())
            #expect(ack.header[0] >> 4 == 5 && ack.header[2] == ControlFrameInfo.startServiceACK)
            // A heartbeat is answered with a heartbeat ACK.
            let heartbeat = SDLFrame.control(version: 5, serviceType: 0, info: ControlFrameInfo.heartbeat, sessionID: 1, messageID: 2)
            try client.send(heartbeat.bytes)
            let answer = try #require(client.readFrame())
            #expect(answer.header[2] == ControlFrameInfo.heartbeatACK)
            // Ten Consecutive frames without a First frame within a second: Core disconnects, so does the simulator.
            for id in UInt32(10)..<UInt32(20) {
                let orphan = SDLFrame(
                    header: FrameHeader(version: 5, frameType: .consecutive, serviceType: 7, frameInfo: 1, sessionID: 1, dataSize: 0, messageID: id),
                    payload: ByteBuffer(bytes: [1, 2, 3]))
                try client.send(orphan.bytes)
            }
            #expect(client.peerClosed())
        }
    }
}
