import Foundation
import Logging
import NIOCore
import NIOPosix
import SyncgateCore
import SyncgateJSON
import SyncgateSDL

/// One TCP connection to a head unit: the SDL session on it (StartService, RegisterAppInterface), requests
/// matched to responses by correlation id with a response timeout, OnHMIStatus tracking, heartbeats answered,
/// and the app's file listing as ListFiles reported it and later PutFile/DeleteFile answers updated it.
/// When the link drops every pending request fails with a retryable error and the connection is dead for good.
///
/// Every wait on the socket (the connect, each answer, room to write) ends at its time limit or as soon as the
/// waiting task is cancelled, and nothing a peer sends or withholds makes it hold unbounded memory (see
/// ``LinkEventBridge``): inbound messages and the bytes of half-assembled ones are capped, the socket is not read
/// while the actor is behind, and requests are only queued while the channel is writable.
actor SDLConnection {
    struct Pending {
        /// Completed by the response, a timeout or the link's loss; its timer is cancelled when it completes.
        var promise: EventLoopPromise<RPCMessage>
        var name: String
    }

    /// Largest frame payload accepted from the head unit (Core's frames are at most its mtu, 128 KiB).
    static let maxInboundFramePayload = 1 << 20
    /// Largest reassembled message accepted from the head unit (a ListFiles answer naming 1,000 files of 255
    /// characters is about 300 KB).
    static let maxInboundMessage = 4 << 20
    /// Most bytes all half-assembled messages from the head unit may hold together.
    static let maxInboundBuffered = 8 << 20
    /// Most multi-frame messages from the head unit open at once.
    static let maxInboundOpenMessages = 8
    /// Largest frame payload this gateway sends, whatever `mtu` the head unit announces (SDL Core's own for protocol
    /// 3 and later): a peer's announcement must not decide how much memory each chunk in flight takes.
    static let maxOutboundFramePayload = 131_072
    /// How long ``close()`` waits, in all, for the head unit's answers to UnregisterAppInterface and EndService.
    static let closeBudget: Duration = .seconds(1)

    let channel: any Channel
    let bridge: LinkEventBridge
    let endpoint: String
    let responseTimeout: Duration
    let logger: Logger
    var version: UInt8 = 1
    var sessionID: UInt8 = 0
    var hashID: Int32 = 0
    /// Largest payload of one frame, from the StartService ACK.
    var mtu = 131_072
    var hmiLevel = "NONE"
    var closedReason: DestinationError?
    var files: Set<String> = []
    /// Whether the last ListFiles named every file: SDL Core names at most ``listFilesLimit``.
    var listingIsComplete = true
    static let listFilesLimit = 1000
    var spaceAvailable: Int64?
    /// A request was REJECTED at level NONE on this connection: wait for a higher level before sending more.
    var noneRejected = false
    var nextMessageID: UInt32 = 1
    var nextCorrelationID: UInt32 = 1
    var pending: [UInt32: Pending] = [:]
    var controlWaiter: (infos: Set<UInt8>, promise: EventLoopPromise<SDLMessage>, timeout: Scheduled<Void>)?

    var isOpen: Bool { closedReason == nil }

    private init(channel: any Channel, bridge: LinkEventBridge, endpoint: String, responseTimeout: Duration, logger: Logger) {
        self.channel = channel
        self.bridge = bridge
        self.endpoint = endpoint
        self.responseTimeout = responseTimeout
        self.logger = logger
    }

    /// Opens the TCP connection (bounded by `connectTimeout`, and by the calling task's cancellation). The SDL
    /// session is started by ``startService()``. A connect that fails is the destination's trouble: ``DestinationError/unavailable(_:code:after:)``.
    static func connect(
        host: String, port: Int, connectTimeout: Duration, responseTimeout: Duration, logger: Logger
    ) async throws -> SDLConnection {
        let (stream, continuation) = AsyncStream<LinkEvent>.makeStream()
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let bridge = LinkEventBridge(
            continuation, eventLoop: loop,
            assembler: MessageAssembler(
                maxMessageSize: maxInboundMessage, maxInFlight: maxInboundOpenMessages, maxBufferedBytes: maxInboundBuffered))
        let connecting = ClientBootstrap(group: loop)
            .connectTimeout(FutureWait.timeAmount(connectTimeout))
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(SDLFrameDecoder(maxPayload: SDLConnection.maxInboundFramePayload)))
                    try channel.pipeline.syncOperations.addHandler(bridge)
                }
            }
            .connect(host: host, port: port)
        let channel: any Channel
        do {
            channel = try await FutureWait.value(of: connecting)
        } catch is CancellationError {
            connecting.whenSuccess { $0.close(promise: nil) }
            continuation.finish()
            throw CancellationError()
        } catch {
            continuation.finish()
            throw DestinationError.unavailable(
                "cannot connect to the head unit at \(host):\(port): \(SDLConnection.describeConnectError(error, timeout: connectTimeout))",
                code: "connect-failed")
        }
        let connection = SDLConnection(
            channel: channel, bridge: bridge, endpoint: "\(host):\(port)", responseTimeout: responseTimeout, logger: logger)
        Task {
            for await event in stream {
                await connection.handle(event)
                bridge.consumed()
            }
            await connection.markClosed(.retryable("the head unit at \(host):\(port) closed the connection", code: "connection-lost"))
        }
        return connection
    }

    /// A short reason for a failed connect ("connection refused", "timed out after 5s").
    static func describeConnectError(_ error: any Error, timeout: Duration) -> String {
        if let error = error as? NIOConnectionError {
            if let first = error.connectionErrors.first { return describeConnectError(first.error, timeout: timeout) }
            if let dns = error.dnsAError ?? error.dnsAAAAError { return "cannot resolve the host: \(dns)" }
        }
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)).lowercased() }
        if let error = error as? ChannelError, case .connectTimeout = error { return "timed out after \(timeout.syncgateText)" }
        return "\(error)"
    }

    // MARK: Inbound

    func handle(_ event: LinkEvent) {
        switch event {
        case .message(let message):
            dispatch(message)
        case .failed(let error as SDLError):
            markClosed(.retryable("the head unit sent a frame this gateway refuses: \(error)", code: "protocol-error"))
        case .failed(let error):
            markClosed(.retryable("connection to the head unit at \(endpoint) failed: \(error)", code: "connection-lost"))
        case .closed:
            markClosed(.retryable("the head unit at \(endpoint) closed the connection", code: "connection-lost"))
        }
    }

    func dispatch(_ message: SDLMessage) {
        if message.isControl {
            if message.frameInfo == ControlFrameInfo.heartbeat {
                answerHeartbeat(service: message.serviceType)
                return
            }
            if let waiter = controlWaiter, waiter.infos.contains(message.frameInfo) {
                controlWaiter = nil
                waiter.timeout.cancel()
                waiter.promise.succeed(message)
            }
            return
        }
        guard message.serviceType == ServiceType.rpc || message.serviceType == ServiceType.bulk else { return }
        let rpc: RPCMessage
        do {
            rpc = try RPCMessage(decoding: message.payload)
        } catch {
            logger.warning("ignoring a malformed RPC from the head unit: \(error)")
            return
        }
        switch rpc.type {
        case .response:
            // Parsed by the caller waiting for it; an answer nobody waits for is dropped unread.
            if let entry = pending.removeValue(forKey: rpc.correlationID) {
                entry.promise.succeed(rpc)
            }
        case .notification:
            notification(rpc)
        case .request:
            break
        }
    }

    /// Answers a heartbeat; the bridge lets the next one through once this answer is written (see
    /// ``LinkEventBridge``).
    func answerHeartbeat(service: UInt8) {
        let bridge = self.bridge
        guard closedReason == nil else {
            bridge.heartbeatAnswered()
            return
        }
        let written = channel.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { _ in bridge.heartbeatAnswered() }
        writeControl(service: service, info: ControlFrameInfo.heartbeatACK, promise: written)
    }

    func notification(_ rpc: RPCMessage) {
        // Only the notifications acted on are parsed.
        guard rpc.functionID == FunctionID.onHMIStatus || rpc.functionID == FunctionID.onAppInterfaceUnregistered,
            let params = try? rpc.parameters()
        else { return }
        switch rpc.functionID {
        case FunctionID.onHMIStatus:
            if let level = params["hmiLevel"]?.string {
                if level != hmiLevel { logger.debug("head unit HMI level \(level)") }
                hmiLevel = level
                if level != "NONE" { noneRejected = false }
            }
        case FunctionID.onAppInterfaceUnregistered:
            let reason = params["reason"]?.string ?? "no reason given"
            markClosed(.retryable("the head unit unregistered the app (\(reason))", code: "APPLICATION_NOT_REGISTERED"))
        default:
            break
        }
    }

    /// Fails everything pending and closes the channel. The first reason sticks.
    func markClosed(_ reason: DestinationError) {
        if closedReason == nil { closedReason = reason }
        let failure = closedReason ?? reason
        for (_, entry) in pending {
            entry.promise.fail(failure)
        }
        pending.removeAll()
        if let waiter = controlWaiter {
            controlWaiter = nil
            waiter.timeout.cancel()
            waiter.promise.fail(failure)
        }
        channel.close(promise: nil)
    }

    // MARK: Outbound

    func takeMessageID() -> UInt32 {
        defer { nextMessageID = nextMessageID == UInt32.max ? 1 : nextMessageID + 1 }
        return nextMessageID
    }

    func writeControl(
        service: UInt8, info: UInt8, payload: ByteBuffer = ByteBuffer(), promise: EventLoopPromise<Void>? = nil
    ) {
        let frame = SDLFrame.control(
            version: version, serviceType: service, info: info, sessionID: sessionID,
            messageID: version > 1 ? takeMessageID() : 0, payload: payload)
        var buffer = channel.allocator.buffer(capacity: 12 + payload.readableBytes)
        frame.write(to: &buffer)
        channel.writeAndFlush(buffer, promise: promise)
    }

    var timeoutText: String { responseTimeout.syncgateText }

    /// Waits for a control frame with one of `infos`, after `send` wrote the request. Ends at `timeout` (which
    /// closes the connection) or when the calling task is cancelled.
    func awaitControl(
        _ infos: Set<UInt8>, timeout: Duration, timeoutError: DestinationError, send: () -> Void
    ) async throws -> SDLMessage {
        if let closedReason { throw closedReason }
        let promise = channel.eventLoop.makePromise(of: SDLMessage.self)
        let scheduled = channel.eventLoop.scheduleTask(in: FutureWait.timeAmount(timeout)) {
            _ = Task { await self.expireControl(timeoutError) }
        }
        controlWaiter = (infos, promise, scheduled)
        send()
        do {
            return try await FutureWait.value(of: promise.futureResult)
        } catch {
            if let waiter = controlWaiter, waiter.promise.futureResult === promise.futureResult {
                controlWaiter = nil
                waiter.timeout.cancel()
                waiter.promise.fail(error)
            }
            throw error
        }
    }

    /// Waits until the channel takes more writes: a head unit that stops reading makes the gateway stop
    /// writing (backpressure), instead of queueing requests for it without end. Bounded by `limit` (the
    /// connection is then closed) and by the calling task's cancellation.
    func waitUntilWritable(sending name: String, limit: Duration) async throws {
        if channel.isWritable { return }
        let loop = channel.eventLoop
        let promise = loop.makePromise(of: Void.self)
        let stalled = DestinationError.retryable(
            "the head unit at \(endpoint) stopped reading: \(name) could not be written within \(limit.syncgateText)",
            code: "timeout")
        let bridge = self.bridge
        loop.execute {
            let timer = loop.scheduleTask(in: FutureWait.timeAmount(limit)) { promise.fail(stalled) }
            promise.futureResult.whenComplete { _ in timer.cancel() }
            bridge.whenWritable(promise)
        }
        do {
            try await FutureWait.value(of: promise.futureResult)
        } catch let error as DestinationError {
            markClosed(error)
            throw error
        } catch is ChannelError {
            throw closedReason ?? .retryable("the head unit at \(endpoint) closed the connection", code: "connection-lost")
        }
    }

    func expireControl(_ error: DestinationError) {
        guard let waiter = controlWaiter else { return }
        controlWaiter = nil
        waiter.promise.fail(error)
        markClosed(error)
    }

    /// Sends a request and returns the future of its response (failed on timeout or link loss). Returns once
    /// the request is handed to the socket, so callers can pipeline; waits first while the channel is not
    /// writable (at most `timeout`, or `response_timeout`).
    func send(
        _ functionID: UInt32, _ parameters: [String: JSONValue], bulk: ByteBuffer = ByteBuffer(),
        service: UInt8 = ServiceType.rpc, timeout: Duration? = nil
    ) async throws -> EventLoopFuture<RPCMessage> {
        if let closedReason { throw closedReason }
        let name = FunctionID.name(functionID)
        let limit = timeout ?? responseTimeout
        try await waitUntilWritable(sending: name, limit: limit)
        if let closedReason { throw closedReason }
        let correlationID = nextCorrelationID
        nextCorrelationID = nextCorrelationID >= 0x7FFF_FFFF ? 1 : nextCorrelationID + 1
        let rpc = RPCMessage(type: .request, functionID: functionID, correlationID: correlationID, parameters: parameters, bulk: bulk)
        let channel = self.channel
        let loop = channel.eventLoop
        let promise = loop.makePromise(of: RPCMessage.self)
        let timeoutError = DestinationError.retryable(
            "the head unit did not answer \(name) within \(limit.syncgateText)", code: "timeout")
        pending[correlationID] = Pending(promise: promise, name: name)
        let messageID = takeMessageID()
        var buffers: [ByteBuffer] = []
        if rpc.encodedSize <= mtu {
            // One frame: header, RPC header and JSON in a small buffer, then the bulk data as it is (no copy).
            var head = channel.allocator.buffer(capacity: 24 + rpc.json.count)
            FrameHeader(
                version: version, frameType: .single, serviceType: service, frameInfo: 0, sessionID: sessionID,
                dataSize: UInt32(rpc.encodedSize), messageID: messageID
            ).write(to: &head)
            head.writeInteger((UInt32(rpc.type.rawValue) << 28) | rpc.functionID)
            head.writeInteger(rpc.correlationID)
            head.writeInteger(UInt32(rpc.json.count))
            head.writeBytes(rpc.json)
            buffers.append(head)
            if bulk.readableBytes > 0 { buffers.append(bulk) }
        } else {
            let frames = MessageFragmenter.frames(
                version: version, serviceType: service, sessionID: sessionID, messageID: messageID,
                payload: rpc.encoded(), maxPayload: mtu)
            var buffer = channel.allocator.buffer(capacity: rpc.encodedSize + 12 * frames.count)
            for frame in frames { frame.write(to: &buffer) }
            buffers.append(buffer)
        }
        // One hop to the event loop per request: its response timer and its writes. The caller does not wait for
        // the write (the window of requests in flight bounds what is queued); a failed write closes the link,
        // which fails every pending response with the reason.
        let written = loop.makePromise(of: Void.self)
        let toWrite = buffers
        loop.execute {
            let timer = loop.scheduleTask(in: FutureWait.timeAmount(limit)) {
                _ = Task { await self.expire(correlationID, timeoutError) }
            }
            promise.futureResult.whenComplete { _ in timer.cancel() }
            for buffer in toWrite.dropLast() { channel.write(buffer, promise: nil) }
            channel.writeAndFlush(toWrite[toWrite.count - 1], promise: written)
        }
        written.futureResult.whenFailure { error in
            Task { await self.markClosed(.retryable("lost the connection to the head unit while sending \(name): \(error)", code: "connection-lost")) }
        }
        return promise.futureResult
    }

    func expire(_ correlationID: UInt32, _ error: DestinationError) {
        guard let entry = pending.removeValue(forKey: correlationID) else { return }
        entry.promise.fail(error)
        // A head unit that stops answering is not trusted with the next request: start afresh next time.
        markClosed(error)
    }

    /// Sends a request and waits for its response (bounded by `timeout` or `response_timeout`, and by the calling
    /// task's cancellation).
    func request(
        _ functionID: UInt32, _ parameters: [String: JSONValue], bulk: ByteBuffer = ByteBuffer(), timeout: Duration? = nil
    ) async throws -> SDLResponse {
        let future = try await send(functionID, parameters, bulk: bulk, timeout: timeout)
        let response = try SDLResponse(try await FutureWait.value(of: future))
        noteResult(response.code)
        return response
    }

    /// A head unit that says the app is not registered has dropped the session: start afresh next time.
    func noteResult(_ code: ResultCode) {
        if code == .applicationNotRegistered {
            markClosed(.retryable("the head unit no longer has the app registered", code: "APPLICATION_NOT_REGISTERED"))
        }
    }
}
