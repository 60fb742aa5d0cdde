import NIOCore
import Synchronization
import SyncgateSDL

/// The end of the channel's pipeline, on its event loop: puts frames together into messages, hands them to the
/// ``SDLConnection`` actor through an ordered stream, and keeps everything a peer can make it hold bounded:
///
/// - Messages are assembled here (linear in their size, bounded by ``MessageAssembler``'s limits), not in the actor.
/// - Backpressure, not buffering: once ``highWater`` events wait for the actor, the socket is no longer read (the
///   peer's writes then stall in TCP) until the actor has caught up to ``lowWater``.
/// - A heartbeat that arrives while the previous one is still being answered is dropped: a peer flooding heartbeats
///   gets one answer in flight at a time, not one queued per heartbeat (answers to a peer that does not read would
///   otherwise pile up without end).
/// - Senders wait here for the channel to become writable again (``whenWritable(_:)``).
///
/// State other than the atomics is only touched on the event loop.
///
/// Unchecked: a NIO handler; its plain fields are touched on its event loop only (above), the rest are atomics.
final class LinkEventBridge: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = SDLFrame
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Events waiting for the actor at which reading stops.
    static let highWater = 64
    /// Events still waiting at which reading resumes.
    static let lowWater = 16

    let continuation: AsyncStream<LinkEvent>.Continuation
    let eventLoop: any EventLoop
    private var assembler: MessageAssembler
    private let waiting = Atomic<Int>(0)
    private let readHeld = Atomic<Bool>(false)
    private let heartbeatBusy = Atomic<Bool>(false)
    private var context: ChannelHandlerContext?
    private var writabilityWaiters: [EventLoopPromise<Void>] = []
    private var inactive = false

    init(_ continuation: AsyncStream<LinkEvent>.Continuation, eventLoop: any EventLoop, assembler: MessageAssembler) {
        self.continuation = continuation
        self.eventLoop = eventLoop
        self.assembler = assembler
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !inactive else { return }
        let message: SDLMessage
        do {
            guard let assembled = try assembler.add(Self.unwrapInboundIn(data)) else { return }
            message = assembled
        } catch {
            fail(error, context: context)
            return
        }
        if message.isControl && message.frameInfo == ControlFrameInfo.heartbeat {
            // One heartbeat answered at a time; a peer that sends more meanwhile gets no more answers.
            guard heartbeatBusy.compareExchange(expected: false, desired: true, ordering: .sequentiallyConsistent).exchanged
            else { return }
        }
        emit(.message(message))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error, context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        inactive = true
        assembler.reset()
        let waiters = writabilityWaiters
        writabilityWaiters = []
        for waiter in waiters { waiter.fail(ChannelError.ioOnClosedChannel) }
        emit(.closed)
        continuation.finish()
        context.fireChannelInactive()
    }

    private func fail(_ error: any Error, context: ChannelHandlerContext) {
        guard !inactive else { return }
        inactive = true
        assembler.reset()
        emit(.failed(error))
        context.close(promise: nil)
    }

    private func emit(_ event: LinkEvent) {
        waiting.add(1, ordering: .sequentiallyConsistent)
        continuation.yield(event)
    }

    // MARK: Backpressure

    func read(context: ChannelHandlerContext) {
        if waiting.load(ordering: .sequentiallyConsistent) >= Self.highWater {
            readHeld.store(true, ordering: .sequentiallyConsistent)
            // The actor may have caught up between the two loads; then nobody else would resume reading.
            guard waiting.load(ordering: .sequentiallyConsistent) < Self.highWater else { return }
            readHeld.store(false, ordering: .sequentiallyConsistent)
        }
        context.read()
    }

    /// The actor handled one event (called from its consumer, on any thread).
    func consumed() {
        let left = waiting.subtract(1, ordering: .sequentiallyConsistent).newValue
        if left <= Self.lowWater && readHeld.load(ordering: .sequentiallyConsistent) {
            eventLoop.execute { self.resumeReading() }
        }
    }

    private func resumeReading() {
        guard let context, readHeld.load(ordering: .sequentiallyConsistent) else { return }
        readHeld.store(false, ordering: .sequentiallyConsistent)
        context.read()
    }

    /// The answer to the last heartbeat was written (or given up): the next heartbeat is answered again.
    func heartbeatAnswered() {
        heartbeatBusy.store(false, ordering: .sequentiallyConsistent)
    }

    // MARK: Writability

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            let waiters = writabilityWaiters
            writabilityWaiters = []
            for waiter in waiters { waiter.succeed() }
        }
        context.fireChannelWritabilityChanged()
    }

    /// Completes `promise` once the channel can take more writes (at once when it can now); fails it when the
    /// channel closes. Call on the event loop.
    func whenWritable(_ promise: EventLoopPromise<Void>) {
        eventLoop.preconditionInEventLoop()
        if inactive {
            promise.fail(ChannelError.ioOnClosedChannel)
        } else if context?.channel.isWritable ?? false {
            promise.succeed()
        } else {
            writabilityWaiters.append(promise)
        }
    }
}
