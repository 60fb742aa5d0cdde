#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HummingbirdCore
import NIOCore

/// Watches one HTTP/1 connection between the HTTP codec and Hummingbird: takes its place in the
/// ``ConnectionLimiter`` (and gives it back when it closes), says when a request is under way, and closes the
/// connection when a client is too slow (``ConnectionLimits``: a head not complete in time, a body not complete in
/// time, a kept-alive connection idle too long), sends too large a body, is answered before its body was read (a
/// request refused on its headers, e.g. without the token: the rest of its body is never read), or takes none of
/// what is written to it for the write-stall limit (a client that asks for `/api/status`, `/metrics` or an event
/// stream and never reads would otherwise hold its answer in memory, and its place, for good).
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
    /// Writes passed on and not yet out, since when none went out (a write completed or fewer bytes waited), the
    /// bytes waiting at the last look, and the look's timer (``watchForStall(_:)``).
    private var unwritten = 0
    private var lastProgress = NIODeadline.now()
    private var bufferedAtLastLook: Int?
    private var stallWatch: Scheduled<Void>?

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
        stallWatch?.cancel()
        stallWatch = nil
        limiter.remove(context.channel)
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        stallWatch?.cancel()
        stallWatch = nil
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
        let promise = watchWrite(promise, context)
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

    /// Counts a write until it is out (in the kernel's socket buffer), and starts watching for a stall; the promise
    /// to pass on in its place.
    private func watchWrite(_ promise: EventLoopPromise<Void>?, _ context: ChannelHandlerContext) -> EventLoopPromise<Void> {
        let written = context.eventLoop.makePromise(of: Void.self)
        if unwritten == 0 {
            lastProgress = .now()
            bufferedAtLastLook = nil
        }
        unwritten += 1
        written.futureResult.assumeIsolated().whenComplete { [self] result in
            unwritten -= 1
            lastProgress = .now()
            promise?.completeWith(result)
        }
        if stallWatch == nil { watchForStall(context) }
        return written
    }

    /// While writes wait, looks every quarter of the write-stall limit whether the client took any bytes (a write
    /// went out whole, or fewer bytes wait than at the last look); after the whole limit without, resets the
    /// connection, and what it held (the answer, an event stream's place) is let go.
    private func watchForStall(_ context: ChannelHandlerContext) {
        stallWatch = context.eventLoop.assumeIsolated().scheduleTask(in: .nanoseconds(limits.writeStall.nanoseconds / 4)) { [self] in
            stallWatch = nil
            guard unwritten > 0 else { return }
            let buffered = try? context.channel.syncOptions?.getOption(ChannelOptions.bufferedWritableBytes)
            if let buffered, let before = bufferedAtLastLook, buffered < before { lastProgress = .now() }
            bufferedAtLastLook = buffered
            if NIODeadline.now() - lastProgress >= limits.writeStall {
                // Reset, not closed: what waits for the client is thrown away at once, by the kernel too.
                _ = (context.channel as? any SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0))
                context.close(promise: nil)
                return
            }
            watchForStall(context)
        }
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
