import Foundation
import NIOCore
import SyncgateJSON
import SyncgateSDL
import SyncgateTestSupport

/// Frames and moves for the scripted hostile peers of the tests, built with the SDL codec (protocol 4 on the wire:
/// no BSON, the hash id in the StartService ACK's message id).
enum HeadUnitPeerScripts {
    static let session: UInt8 = 1

    static func frame(_ type: FrameType, service: UInt8, info: UInt8 = 0, messageID: UInt32, payload: [UInt8]) -> [UInt8] {
        SDLFrame(
            header: FrameHeader(
                version: 4, frameType: type, serviceType: service, frameInfo: info, sessionID: session,
                dataSize: UInt32(payload.count), messageID: messageID),
            payload: ByteBuffer(bytes: payload)
        ).bytes
    }

    static let heartbeat = SDLFrame.control(
        version: 4, serviceType: ServiceType.control, info: ControlFrameInfo.heartbeat, sessionID: session, messageID: 7
    ).bytes

    /// A protocol-4 StartService ACK (hash id 0x1234 in the message id).
    static let startServiceACK = SDLFrame.control(
        version: 4, serviceType: ServiceType.rpc, info: ControlFrameInfo.startServiceACK, sessionID: session, messageID: 0x1234
    ).bytes

    /// A First frame announcing `total` bytes in `count` Consecutive frames.
    static func first(messageID: UInt32, total: Int, count: Int) -> [UInt8] {
        var payload = ByteBuffer()
        payload.writeInteger(UInt32(total))
        payload.writeInteger(UInt32(count))
        return frame(.first, service: ServiceType.rpc, messageID: messageID, payload: Array(payload.readableBytesView))
    }

    /// The `index`-th (from 1) Consecutive frame of a message; the last one is numbered 0.
    static func consecutive(messageID: UInt32, index: Int, last: Bool, payload: [UInt8]) -> [UInt8] {
        frame(.consecutive, service: ServiceType.rpc, info: last ? 0 : UInt8((index - 1) % 255 + 1), messageID: messageID, payload: payload)
    }

    /// A response to the request in `payload` (an RPC payload), with these parameters.
    static func response(to payload: [UInt8], messageID: UInt32, _ parameters: [String: JSONValue]) -> [UInt8]? {
        guard let request = try? RPCMessage(decoding: payload) else { return nil }
        let rpc = RPCMessage(type: .response, functionID: request.functionID, correlationID: request.correlationID, parameters: parameters)
        return frame(.single, service: ServiceType.rpc, messageID: messageID, payload: Array(rpc.encoded().readableBytesView))
    }

    /// Plays a willing head unit up to a registered app with an empty listing: StartService ACK, RegisterAppInterface
    /// and ListFiles answered SUCCESS. False when the gateway did not ask as expected.
    static func handshake(_ socket: HeadUnitPeerSocket) -> Bool {
        guard socket.readFrame() != nil, socket.send(startServiceACK) else { return false }
        var messageID: UInt32 = 1
        for _ in 0..<2 {  // RegisterAppInterface, then ListFiles
            guard let request = socket.readFrame(),
                let answer = response(
                    to: request.payload, messageID: messageID,
                    ["success": .bool(true), "resultCode": .string("SUCCESS"), "spaceAvailable": .int(100 << 20)]),
                socket.send(answer)
            else { return false }
            messageID += 1
        }
        return true
    }

    /// Sends heartbeats as fast as the gateway takes them, never reading, until the connection ends; counts the
    /// bytes sent.
    static func floodHeartbeats(_ socket: HeadUnitPeerSocket, sent: Counter) {
        let block = Array([[UInt8]](repeating: heartbeat, count: 65_536 / heartbeat.count).joined())
        while socket.send(block) { sent.add(block.count) }
    }

    /// Opens `count` multi-frame messages of `size` bytes each and fills them, round robin, in 64 KiB frames up to
    /// one frame short of complete; never reads; holds the connection open. Counts the bytes sent.
    static func holdPartialMessages(_ socket: HeadUnitPeerSocket, count: Int, size: Int, sent: Counter) {
        let frameSize = 65_536
        let frames = size / frameSize
        for id in 1...count {
            let bytes = first(messageID: UInt32(id), total: size, count: frames)
            guard socket.send(bytes) else { return }
            sent.add(bytes.count)
        }
        let chunk = [UInt8](repeating: 0x41, count: frameSize)
        for index in 1..<frames {
            for id in 1...count {
                let bytes = consecutive(messageID: UInt32(id), index: index, last: false, payload: chunk)
                guard socket.send(bytes) else { return }
                sent.add(bytes.count)
            }
        }
        socket.hold(60)
    }

    /// Before acknowledging StartService, sends one `size`-byte message (a notification nobody asked for) in
    /// `frameSize`-byte Consecutive frames, then the ACK; returns when the gateway, having taken the message in,
    /// goes on to RegisterAppInterface (true), or gives up (false).
    static func largeMessageThenACK(_ socket: HeadUnitPeerSocket, size: Int, frameSize: Int) -> Bool {
        guard socket.readFrame() != nil else { return false }
        var payload = ByteBuffer()
        payload.writeInteger(UInt32(2) << 28 | 0x8FFF)  // a notification with a function id nobody handles
        payload.writeInteger(RPCMessage.notificationCorrelationID)
        payload.writeInteger(UInt32(0))
        payload.writeRepeatingByte(0x42, count: size - 12)
        let frames = (size + frameSize - 1) / frameSize
        var batch: [UInt8] = first(messageID: 99, total: size, count: frames)
        for index in 1...frames {
            let slice = payload.readSlice(length: min(frameSize, payload.readableBytes))!
            batch += consecutive(messageID: 99, index: index, last: index == frames, payload: Array(slice.readableBytesView))
            if batch.count >= 1 << 20 || index == frames {
                guard socket.send(batch) else { return false }
                batch.removeAll(keepingCapacity: true)
            }
        }
        guard socket.send(startServiceACK), let request = socket.readFrame(timeout: 60) else { return false }
        return (try? RPCMessage(decoding: ByteBuffer(bytes: request.payload)))?.functionID == FunctionID.registerAppInterface
    }

    /// Counts what a peer sent (across its threads).
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var total = 0
        func add(_ n: Int) { lock.withLock { total += n } }
        var value: Int { lock.withLock { total } }
    }
}
