import NIOCore

/// One frame: a header and exactly `header.dataSize` bytes of payload.
public struct SDLFrame: Sendable, Equatable {
    public var header: FrameHeader
    public var payload: ByteBuffer

    public init(header: FrameHeader, payload: ByteBuffer) {
        self.header = header
        self.payload = payload
        self.header.dataSize = UInt32(payload.readableBytes)
    }

    /// A control frame (heartbeat, StartService, ACK, EndService, ...).
    public static func control(
        version: UInt8, serviceType: UInt8, info: UInt8, sessionID: UInt8, messageID: UInt32,
        payload: ByteBuffer = ByteBuffer()
    ) -> SDLFrame {
        SDLFrame(
            header: FrameHeader(
                version: version, frameType: .control, serviceType: serviceType, frameInfo: info, sessionID: sessionID,
                dataSize: 0, messageID: messageID),
            payload: payload)
    }

    /// Appends the whole frame (header and payload) to `buffer`.
    public func write(to buffer: inout ByteBuffer) {
        header.write(to: &buffer)
        var payload = payload
        buffer.writeBuffer(&payload)
    }

    /// The frame's bytes.
    public var bytes: [UInt8] {
        var buffer = ByteBufferAllocator().buffer(capacity: header.size + payload.readableBytes)
        write(to: &buffer)
        return buffer.readBytes(length: buffer.readableBytes) ?? []
    }
}
