import NIOCore

/// Turns one message payload into frames no larger than `maxPayload`: a Single frame when it fits, else a
/// First frame (total size, number of Consecutive frames) followed by Consecutive frames numbered 1...255,
/// 1..., the last numbered 0.
public enum MessageFragmenter {
    public static func frames(
        version: UInt8, serviceType: UInt8, sessionID: UInt8, messageID: UInt32, payload: ByteBuffer, maxPayload: Int
    ) -> [SDLFrame] {
        precondition(maxPayload > 0)
        let total = payload.readableBytes
        if total <= maxPayload {
            return [
                SDLFrame(
                    header: FrameHeader(
                        version: version, frameType: .single, serviceType: serviceType, frameInfo: 0,
                        sessionID: sessionID, dataSize: UInt32(total), messageID: messageID),
                    payload: payload)
            ]
        }
        let count = (total + maxPayload - 1) / maxPayload
        var first = ByteBufferAllocator().buffer(capacity: 8)
        first.writeInteger(UInt32(total))
        first.writeInteger(UInt32(count))
        var frames = [
            SDLFrame(
                header: FrameHeader(
                    version: version, frameType: .first, serviceType: serviceType, frameInfo: 0, sessionID: sessionID,
                    dataSize: 8, messageID: messageID),
                payload: first)
        ]
        var rest = payload
        var index = 0
        while rest.readableBytes > 0 {
            index += 1
            let slice = rest.readSlice(length: min(maxPayload, rest.readableBytes))!
            let isLast = rest.readableBytes == 0
            let info: UInt8 = isLast ? 0 : UInt8(((index - 1) % 255) + 1)
            frames.append(
                SDLFrame(
                    header: FrameHeader(
                        version: version, frameType: .consecutive, serviceType: serviceType, frameInfo: info,
                        sessionID: sessionID, dataSize: UInt32(slice.readableBytes), messageID: messageID),
                    payload: slice))
        }
        return frames
    }
}
