import NIOCore

/// Stops reading a connection once more than `budget` bytes have arrived, without closing it: the "head unit hangs
/// mid-file" fault. The bytes past the budget are never delivered to the session, so it answers nothing more; the
/// client's writes then back up in TCP. The budget counts from the first byte, as ``ByteCutter``'s does.
final class ByteStaller: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private var remaining: Int
    private var stalled = false

    init(budget: Int) { remaining = budget }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !stalled else { return }
        var buffer = Self.unwrapInboundIn(data)
        if buffer.readableBytes > remaining {
            let keep = buffer.readSlice(length: remaining)!
            remaining = 0
            stalled = true
            if keep.readableBytes > 0 { context.fireChannelRead(Self.wrapInboundOut(keep)) }
            SimulatorLog.line("FAULT stalled the connection after the byte budget: no more reading or answering")
            context.channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
            return
        }
        remaining -= buffer.readableBytes
        context.fireChannelRead(Self.wrapInboundOut(buffer))
    }

    func read(context: ChannelHandlerContext) {
        guard !stalled else { return }
        context.read()
    }
}

extension ByteStaller: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
}
