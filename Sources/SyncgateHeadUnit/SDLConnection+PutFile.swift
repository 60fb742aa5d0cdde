import NIOCore
import SyncgateCore
import SyncgateSDL

/// PutFiles in batches: the frames of several chunks handed to the event loop at once and flushed once, each
/// chunk's JSON written straight into its frame's header buffer from the file's ``PutFileTemplate``, the answers
/// delivered to a ``ResponseWindow``.
extension SDLConnection {
    /// One chunk of a file, its CRC taken: the request's `offset`, `length` (the whole file's size for the first)
    /// and `crc`, its place in the file's ``ResponseWindow``, and its bytes.
    struct PutFileChunk: Sendable {
        var offset: Int64
        var length: Int64
        var crc: UInt32
        var sequence: Int
        var bulk: ByteBuffer
    }

    /// Sends `chunks` as PutFiles on the bulk service, in order, each as one frame (header, RPC header, JSON in a
    /// small buffer, then the chunk's bytes as they are: written together with `writev`, not copied). Returns once
    /// they are handed to the socket; each answer, or its failure (the response timeout, the link lost), goes to
    /// `window`. Waits first while the channel is not writable, as ``send(_:_:bulk:service:timeout:)`` does.
    func sendPutFiles(_ chunks: [PutFileChunk], template: PutFileTemplate, window: ResponseWindow) async throws {
        guard !chunks.isEmpty else { return }
        if let closedReason { throw closedReason }
        let name = FunctionID.name(FunctionID.putFile)
        let limit = responseTimeout
        try await waitUntilWritable(sending: name, limit: limit)
        if let closedReason { throw closedReason }
        let channel = self.channel
        let loop = channel.eventLoop
        let timeoutError = DestinationError.retryable("the head unit did not answer \(name) within \(limit.syncgateText)", code: "timeout")
        var requests: [(head: ByteBuffer, bulk: ByteBuffer, correlationID: UInt32, sequence: Int, promise: EventLoopPromise<RPCMessage>)] = []
        requests.reserveCapacity(chunks.count)
        // Checked before any is registered: a batch goes whole or not at all.
        let sizes = chunks.map { template.size(offset: $0.offset, length: $0.length, crc: $0.crc) }
        for (chunk, jsonSize) in zip(chunks, sizes) where RPCMessage.headerSize + jsonSize + chunk.bulk.readableBytes > mtu {
            throw DestinationError.permanent(
                "a PutFile of \(RPCMessage.headerSize + jsonSize + chunk.bulk.readableBytes) bytes does not fit the head unit's MTU of \(mtu) bytes",
                code: "protocol-error")
        }
        for (chunk, jsonSize) in zip(chunks, sizes) {
            let payloadSize = RPCMessage.headerSize + jsonSize + chunk.bulk.readableBytes
            let correlationID = nextCorrelationID
            nextCorrelationID = nextCorrelationID >= 0x7FFF_FFFF ? 1 : nextCorrelationID + 1
            let promise = loop.makePromise(of: RPCMessage.self)
            pending[correlationID] = Pending(promise: promise, name: name)
            var head = channel.allocator.buffer(capacity: 24 + jsonSize)
            FrameHeader(
                version: version, frameType: .single, serviceType: ServiceType.bulk, frameInfo: 0, sessionID: sessionID,
                dataSize: UInt32(payloadSize), messageID: takeMessageID()
            ).write(to: &head)
            head.writeInteger((UInt32(RPCType.request.rawValue) << 28) | FunctionID.putFile)
            head.writeInteger(correlationID)
            head.writeInteger(UInt32(jsonSize))
            template.write(offset: chunk.offset, length: chunk.length, crc: chunk.crc, to: &head)
            requests.append((head, chunk.bulk, correlationID, chunk.sequence, promise))
        }
        // One hop to the event loop for the batch: each request's response timer, its writes, one flush. The timer
        // is cancelled on the loop when the answer comes; a failed write closes the link, which fails every
        // pending response with the reason.
        let written = loop.makePromise(of: Void.self)
        let batch = requests
        loop.execute {
            for (index, request) in batch.enumerated() {
                let correlationID = request.correlationID
                let timer = loop.scheduleTask(in: FutureWait.timeAmount(limit)) {
                    _ = Task { await self.expire(correlationID, timeoutError) }
                }
                let sequence = request.sequence
                request.promise.futureResult.whenComplete { result in
                    timer.cancel()
                    window.complete(sequence, result)
                }
                channel.write(request.head, promise: nil)
                if index < batch.count - 1 {
                    channel.write(request.bulk, promise: nil)
                } else {
                    channel.writeAndFlush(request.bulk, promise: written)
                }
            }
        }
        written.futureResult.whenFailure { error in
            Task { await self.markClosed(.retryable("lost the connection to the head unit while sending \(name): \(error)", code: "connection-lost")) }
        }
    }
}
