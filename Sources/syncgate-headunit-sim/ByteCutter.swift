import NIOCore

/// Closes the connection once more than `budget` bytes have arrived: the "car switched off mid-file" fault.
/// The bytes past the budget are never delivered to the session.
final class ByteCutter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private var remaining: Int

    init(budget: Int) { remaining = budget }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard remaining > 0 else { return }
        var buffer = Self.unwrapInboundIn(data)
        if buffer.readableBytes > remaining {
            let keep = buffer.readSlice(length: remaining)!
            remaining = 0
            context.fireChannelRead(Self.wrapInboundOut(keep))
            SimulatorLog.line("FAULT cut the connection after the byte budget")
            context.close(promise: nil)
            return
        }
        remaining -= buffer.readableBytes
        context.fireChannelRead(Self.wrapInboundOut(buffer))
    }
}
