import NIOCore

/// Puts First + Consecutive frames back together into messages, with bounds a peer cannot talk its way past: a
/// message may not announce more than `maxMessageSize` bytes, at most `maxInFlight` multi-frame messages may be
/// open at once, and together they may hold at most `maxBufferedBytes` received bytes. Consecutive frames must
/// arrive in sequence (1, 2, ... 255, 1, ... and 0 for the last), and the last one must complete the announced
/// size exactly.
///
/// Assembly costs time linear in the message's size whatever the frame size: each frame's bytes are appended in
/// place to the message's one buffer (never copied again), which grows geometrically as data really arrives.
public struct MessageAssembler: Sendable {
    public var maxMessageSize: Int
    public var maxInFlight: Int
    public var maxBufferedBytes: Int

    struct Key: Hashable, Sendable {
        var session: UInt8
        var service: UInt8
        var messageID: UInt32
    }

    struct Partial: Sendable {
        var version: UInt8
        var totalSize: Int
        var frameCount: UInt32
        var received: UInt32
        var data: ByteBuffer
    }

    private var partials: [Key: Partial] = [:]
    /// Bytes held by all open messages together.
    public private(set) var bufferedBytes = 0

    /// `maxBufferedBytes` defaults to `maxMessageSize`: the open messages together may hold one largest message.
    public init(maxMessageSize: Int, maxInFlight: Int = 8, maxBufferedBytes: Int? = nil) {
        self.maxMessageSize = maxMessageSize
        self.maxInFlight = maxInFlight
        self.maxBufferedBytes = maxBufferedBytes ?? maxMessageSize
    }

    /// Number of multi-frame messages currently being assembled.
    public var openMessages: Int { partials.count }

    /// Feeds one frame; returns a message when the frame completes one.
    public mutating func add(_ frame: SDLFrame) throws -> SDLMessage? {
        let header = frame.header
        switch header.frameType {
        case .control, .single:
            return SDLMessage(
                version: header.version, frameType: header.frameType, serviceType: header.serviceType,
                frameInfo: header.frameType == .control ? header.frameInfo : 0, sessionID: header.sessionID,
                messageID: header.messageID, payload: frame.payload)
        case .first:
            var payload = frame.payload
            guard payload.readableBytes == 8, let total = payload.readInteger(as: UInt32.self),
                let count = payload.readInteger(as: UInt32.self)
            else { throw SDLError.malformedFrame("a First frame must carry total size and frame count (8 bytes)") }
            guard Int(total) <= maxMessageSize else {
                throw SDLError.messageTooLarge(size: Int(total), limit: maxMessageSize)
            }
            guard total > 0, count > 0, count <= total else {
                throw SDLError.malformedFrame("First frame announces \(total) bytes in \(count) frames")
            }
            let key = Key(session: header.sessionID, service: header.serviceType, messageID: header.messageID)
            guard partials[key] == nil else {
                throw SDLError.malformedFrame("a second First frame for message \(header.messageID)")
            }
            guard partials.count < maxInFlight else {
                throw SDLError.malformedFrame("more than \(maxInFlight) multi-frame messages open at once")
            }
            // Reserve lazily: the announced size is bounded, but memory is only used as data really arrives.
            partials[key] = Partial(
                version: header.version, totalSize: Int(total), frameCount: count, received: 0,
                data: ByteBufferAllocator().buffer(capacity: 0))
            return nil
        case .consecutive:
            let key = Key(session: header.sessionID, service: header.serviceType, messageID: header.messageID)
            // Taken out of the dictionary while it grows, so that its buffer is uniquely referenced and appended to
            // in place: a copy left in the dictionary would make every append copy the whole buffer (quadratic).
            guard var partial = partials.removeValue(forKey: key) else {
                throw SDLError.malformedFrame("Consecutive frame for message \(header.messageID) without a First frame")
            }
            let held = partial.data.readableBytes
            bufferedBytes -= held
            partial.received += 1
            let isLast = header.frameInfo == 0
            let expected = UInt8(truncatingIfNeeded: ((partial.received - 1) % 255) + 1)
            if !isLast && header.frameInfo != expected {
                throw SDLError.malformedFrame("Consecutive frame numbered \(header.frameInfo), expected \(expected)")
            }
            let newSize = held + frame.payload.readableBytes
            guard newSize <= partial.totalSize else {
                throw SDLError.malformedFrame("Consecutive frames exceed the announced \(partial.totalSize) bytes")
            }
            guard isLast || bufferedBytes + newSize <= maxBufferedBytes else {
                throw SDLError.malformedFrame(
                    "open multi-frame messages would hold more than \(maxBufferedBytes) bytes together")
            }
            var chunk = frame.payload
            partial.data.writeBuffer(&chunk)
            if isLast {
                guard newSize == partial.totalSize else {
                    throw SDLError.malformedFrame("message \(header.messageID) ended at \(newSize) of \(partial.totalSize) bytes")
                }
                return SDLMessage(
                    version: header.version, frameType: .single, serviceType: header.serviceType,
                    sessionID: header.sessionID, messageID: header.messageID, payload: partial.data)
            }
            if partial.received >= partial.frameCount || newSize == partial.totalSize {
                throw SDLError.malformedFrame("message \(header.messageID): the last Consecutive frame must be numbered 0")
            }
            bufferedBytes += newSize
            partials[key] = partial
            return nil
        }
    }

    /// Forgets every half-assembled message (after a disconnect).
    public mutating func reset() {
        partials.removeAll()
        bufferedBytes = 0
    }
}
