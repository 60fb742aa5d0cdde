import NIOCore
import SyncgateSDL

/// Hands the channel's frames and its end to the ``SDLConnection`` actor through an ordered stream.
final class LinkEventBridge: ChannelInboundHandler, Sendable {
    typealias InboundIn = SDLFrame
    let continuation: AsyncStream<LinkEvent>.Continuation

    init(_ continuation: AsyncStream<LinkEvent>.Continuation) { self.continuation = continuation }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        continuation.yield(.frame(Self.unwrapInboundIn(data)))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        continuation.yield(.failed(error))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        continuation.yield(.closed)
        continuation.finish()
        context.fireChannelInactive()
    }
}
