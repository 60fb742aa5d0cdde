import NIOCore

/// An SDL frame header: 8 bytes for protocol version 1, 12 bytes (with a message id) for versions 2 to 5.
/// Big-endian throughout.
public struct FrameHeader: Sendable, Hashable, CustomStringConvertible {
    public var version: UInt8
    /// The encryption (v1-v4 compression) flag, bit 3 of byte 0.
    public var encrypted: Bool
    public var frameType: FrameType
    public var serviceType: UInt8
    public var frameInfo: UInt8
    public var sessionID: UInt8
    /// Size of this frame's payload.
    public var dataSize: UInt32
    /// Message id; always 0 (and not on the wire) for version 1.
    public var messageID: UInt32

    public static let supportedVersions: ClosedRange<UInt8> = 1...5

    public init(
        version: UInt8, encrypted: Bool = false, frameType: FrameType, serviceType: UInt8, frameInfo: UInt8,
        sessionID: UInt8, dataSize: UInt32, messageID: UInt32
    ) {
        self.version = version
        self.encrypted = encrypted
        self.frameType = frameType
        self.serviceType = serviceType
        self.frameInfo = frameInfo
        self.sessionID = sessionID
        self.dataSize = dataSize
        self.messageID = version == 1 ? 0 : messageID
    }

    /// Header length on the wire for a protocol version.
    public static func size(forVersion version: UInt8) -> Int { version == 1 ? 8 : 12 }

    public var size: Int { FrameHeader.size(forVersion: version) }

    /// Appends the header to `buffer`.
    public func write(to buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8((version & 0x0F) << 4) | (encrypted ? 0x08 : 0) | frameType.rawValue)
        buffer.writeInteger(serviceType)
        buffer.writeInteger(frameInfo)
        buffer.writeInteger(sessionID)
        buffer.writeInteger(dataSize)
        if version != 1 { buffer.writeInteger(messageID) }
    }

    /// The header's bytes.
    public var bytes: [UInt8] {
        var buffer = ByteBufferAllocator().buffer(capacity: 12)
        write(to: &buffer)
        return buffer.readBytes(length: buffer.readableBytes) ?? []
    }

    /// Reads a header at the start of `buffer` without consuming it. Returns `nil` when more bytes are needed;
    /// throws for a version or frame type that does not exist.
    public static func peek(_ buffer: ByteBuffer) throws -> FrameHeader? {
        guard let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return nil }
        let version = first >> 4
        guard supportedVersions.contains(version) else {
            throw SDLError.malformedFrame("unsupported protocol version \(version)")
        }
        guard let frameType = FrameType(rawValue: first & 0x07) else {
            throw SDLError.malformedFrame("unknown frame type \(first & 0x07)")
        }
        let size = FrameHeader.size(forVersion: version)
        guard buffer.readableBytes >= size else { return nil }
        let base = buffer.readerIndex
        let service = buffer.getInteger(at: base + 1, as: UInt8.self)!
        let info = buffer.getInteger(at: base + 2, as: UInt8.self)!
        let session = buffer.getInteger(at: base + 3, as: UInt8.self)!
        let dataSize = buffer.getInteger(at: base + 4, as: UInt32.self)!
        let messageID = version == 1 ? 0 : buffer.getInteger(at: base + 8, as: UInt32.self)!
        return FrameHeader(
            version: version, encrypted: first & 0x08 != 0, frameType: frameType, serviceType: service,
            frameInfo: info, sessionID: session, dataSize: dataSize, messageID: messageID)
    }

    /// Decodes a header from exactly its bytes.
    public static func decode(_ bytes: [UInt8]) throws -> FrameHeader {
        let buffer = ByteBuffer(bytes: bytes)
        guard let header = try peek(buffer) else {
            throw SDLError.malformedFrame("header needs more than \(bytes.count) bytes")
        }
        guard header.size == bytes.count else {
            throw SDLError.malformedFrame("a v\(header.version) header is \(header.size) bytes, got \(bytes.count)")
        }
        return header
    }

    public var description: String {
        let kind = frameType == .control ? ControlFrameInfo.name(frameInfo) : "\(frameType)"
        return "v\(version) \(kind) service=0x\(String(serviceType, radix: 16)) session=\(sessionID) size=\(dataSize) msg=\(messageID)"
    }
}
