import NIOCore

/// A swift-nio decoder that cuts the inbound byte stream into ``SDLFrame``s with ``FrameParser``'s limits.
/// A frame that is malformed or too large fails the pipeline with an ``SDLError``.
public struct SDLFrameDecoder: ByteToMessageDecoder, Sendable {
    public typealias InboundOut = SDLFrame
    public var parser: FrameParser

    public init(maxPayload: Int) {
        parser = FrameParser(maxPayload: maxPayload)
    }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let frame = try parser.next(from: &buffer) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(frame))
        return .continue
    }

    public mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        return .needMoreData
    }
}
