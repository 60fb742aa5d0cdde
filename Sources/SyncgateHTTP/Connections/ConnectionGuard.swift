import HummingbirdCore
import NIOCore

/// Watches one HTTP/1 connection between the HTTP codec and Hummingbird: takes its place in the
/// ``ConnectionLimiter`` (and gives it back when it closes), says when a request is under way, and closes the
/// connection when a client is too slow (``ConnectionLimits``: a head not complete in time, a body not complete in
/// time, a kept-alive connection idle too long), sends too large a body, or is answered before its body was read (a
/// request refused on its headers, e.g. without the token: the rest of its body is never read).
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP1Channel.Value.InboundPart
    typealias InboundOut = HTTP1Channel.Value.InboundPart
    typealias OutboundIn = HTTP1Channel.Value.OutboundPart
    typealias OutboundOut = HTTP1Channel.Value.OutboundPart

    private enum Wait {
        case head
        case body
        case nextHead
    }

    private let limiter: ConnectionLimiter
    private let limits: ConnectionLimits
    private var started = false
    /// Requests whose head was read and whose answer has not ended.
    private var unanswered = 0
    /// A request's body is still coming.
    private var bodyOpen = false
    private var bodyBytes = 0
    private var timer: Scheduled<Void>?

    init(limiter: ConnectionLimiter, limits: ConnectionLimits) {
        self.limiter = limiter
        self.limits = limits
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        limiter.remove(context.channel)
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        limiter.remove(context.channel)
        context.fireChannelInactive()
    }

    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        guard limiter.admit(context.channel) else {
            context.close(promise: nil)
            return
        }
        schedule(.head, after: limits.header, context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            unanswered += 1
            bodyOpen = true
            bodyBytes = 0
            limiter.busy(context.channel)
            schedule(.body, after: limits.body, context)
        case .body(let bytes):
            bodyBytes += bytes.readableBytes
            if bodyBytes > limits.bodyBytes {
                context.close(promise: nil)
                return
            }
        case .end:
            bodyOpen = false
            cancelTimer()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        unanswered = max(0, unanswered - 1)
        guard unanswered == 0 else {
            context.write(data, promise: promise)
            return
        }
        if bodyOpen {
            // Answered before its body was read: what is left of it is not wanted.
            context.writeAndFlush(data, promise: promise)
            context.close(promise: nil)
            return
        }
        limiter.idle(context.channel)
        schedule(.nextHead, after: limits.idle, context)
        context.write(data, promise: promise)
    }

    private func schedule(_ wait: Wait, after delay: TimeAmount, _ context: ChannelHandlerContext) {
        cancelTimer()
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
            timer = nil
            let stillWaiting = switch wait {
            case .head, .nextHead: unanswered == 0
            case .body: bodyOpen
            }
            if stillWaiting { context.close(promise: nil) }
        }
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
    }
}

@available(*, unavailable)
extension ConnectionGuard: Sendable {}

/// Names the parts an async channel carries (for Hummingbird's HTTP/1 channel: the request and response parts of
/// NIOHTTPTypes, which this module does not import itself).
protocol AsyncChannelParts {
    associatedtype InboundPart
    associatedtype OutboundPart
}

extension NIOAsyncChannel: AsyncChannelParts {
    typealias InboundPart = Inbound
    typealias OutboundPart = Outbound
}
