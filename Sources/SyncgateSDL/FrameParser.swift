import NIOCore

/// Cuts a byte stream into frames. A frame whose declared payload exceeds `maxPayload` is refused as soon as
/// its header is read, before any of it is buffered, so a hostile size never causes a large allocation.
public struct FrameParser: Sendable {
    public var maxPayload: Int

    public init(maxPayload: Int) {
        self.maxPayload = maxPayload
    }

    /// Takes one complete frame off the front of `buffer`, or returns `nil` (consuming nothing) when the
    /// buffer does not hold a whole frame yet.
    public func next(from buffer: inout ByteBuffer) throws -> SDLFrame? {
        guard let header = try FrameHeader.peek(buffer) else { return nil }
        let size = Int(header.dataSize)
        guard size <= maxPayload else { throw SDLError.frameTooLarge(size: size, limit: maxPayload) }
        if header.frameType == .first && size != 8 {
            throw SDLError.malformedFrame("a First frame carries 8 bytes, this one declares \(size)")
        }
        guard buffer.readableBytes >= header.size + size else { return nil }
        buffer.moveReaderIndex(forwardBy: header.size)
        let payload = buffer.readSlice(length: size)!
        return SDLFrame(header: header, payload: payload)
    }

    /// Parses a buffer that must hold exactly one frame.
    public func parseOne(_ bytes: [UInt8]) throws -> SDLFrame {
        var buffer = ByteBuffer(bytes: bytes)
        guard let frame = try next(from: &buffer) else {
            throw SDLError.malformedFrame("truncated frame (\(bytes.count) bytes)")
        }
        guard buffer.readableBytes == 0 else {
            throw SDLError.malformedFrame("\(buffer.readableBytes) bytes after the frame")
        }
        return frame
    }
}
