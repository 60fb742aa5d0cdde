import NIOCore

/// Closes the connection once more than `budget` bytes have arrived: the "car switched off mid-file" fault.
/// The bytes past the budget are never delivered to the session.
/// The budget is taken when the first byte arrives, so port probes that connect and leave do not use it up.
final class ByteCutter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    private let settings: SimulatorSettings
    private var remaining: Int?

    init(settings: SimulatorSettings) { self.settings = settings }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if remaining == nil { remaining = settings.takeCutBudget() ?? Int.max }
        guard let remaining, remaining > 0 else { return }
        var buffer = Self.unwrapInboundIn(data)
        if buffer.readableBytes > remaining {
            let keep = buffer.readSlice(length: remaining)!
            self.remaining = 0
            context.fireChannelRead(Self.wrapInboundOut(keep))
            SimulatorLog.line("FAULT cut the connection after the byte budget")
            // The answers to what came before the cut go out first (the session flushes them at the read's end).
            context.flush()
            context.close(promise: nil)
            return
        }
        self.remaining = remaining - buffer.readableBytes
        context.fireChannelRead(Self.wrapInboundOut(buffer))
    }
}
