import NIOCore

/// A whole message: one Single frame, a control frame, or a First frame and its Consecutive frames put back
/// together.
public struct SDLMessage: Sendable, Equatable {
    public var version: UInt8
    public var frameType: FrameType
    public var serviceType: UInt8
    /// Control frame info (for control frames); 0 otherwise.
    public var frameInfo: UInt8
    public var sessionID: UInt8
    public var messageID: UInt32
    public var payload: ByteBuffer

    public init(
        version: UInt8, frameType: FrameType, serviceType: UInt8, frameInfo: UInt8 = 0, sessionID: UInt8,
        messageID: UInt32, payload: ByteBuffer
    ) {
        self.version = version
        self.frameType = frameType
        self.serviceType = serviceType
        self.frameInfo = frameInfo
        self.sessionID = sessionID
        self.messageID = messageID
        self.payload = payload
    }

    public var isControl: Bool { frameType == .control }

    /// The payload's bytes.
    public var payloadBytes: [UInt8] { payload.getBytes(at: payload.readerIndex, length: payload.readableBytes) ?? [] }
}
