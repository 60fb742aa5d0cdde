import NIOCore
import SyncgateJSON

/// An RPC payload: the 12-byte binary header (RPC type in the top 4 bits and function id in the low 28 bits;
/// correlation id; JSON size), the JSON parameters, then bulk data.
public struct RPCMessage: Sendable, Equatable {
    public var type: RPCType
    public var functionID: UInt32
    public var correlationID: UInt32
    public var json: [UInt8]
    public var bulk: ByteBuffer

    /// Correlation id of notifications.
    public static let notificationCorrelationID: UInt32 = 0xFFFF_FFFF
    public static let headerSize = 12

    public init(type: RPCType, functionID: UInt32, correlationID: UInt32, json: [UInt8], bulk: ByteBuffer = ByteBuffer()) {
        self.type = type
        self.functionID = functionID & 0x0FFF_FFFF
        self.correlationID = correlationID
        self.json = json
        self.bulk = bulk
    }

    /// Builds a message with parameters encoded as compact JSON.
    public init(
        type: RPCType, functionID: UInt32, correlationID: UInt32, parameters: [String: JSONValue],
        bulk: ByteBuffer = ByteBuffer()
    ) {
        let json = RPCParameters.encode(parameters)
        self.init(type: type, functionID: functionID, correlationID: correlationID, json: json, bulk: bulk)
    }

    /// Decodes a message payload. Throws when it is shorter than the header, the JSON size overruns the
    /// payload, or the RPC type is unknown.
    public init(decoding payload: ByteBuffer) throws {
        var payload = payload
        guard payload.readableBytes >= RPCMessage.headerSize else {
            throw SDLError.malformedRPC("payload of \(payload.readableBytes) bytes is shorter than the 12-byte RPC header")
        }
        let word = payload.readInteger(as: UInt32.self)!
        let correlation = payload.readInteger(as: UInt32.self)!
        let jsonSize = Int(payload.readInteger(as: UInt32.self)!)
        guard let type = RPCType(rawValue: UInt8(word >> 28)) else {
            throw SDLError.malformedRPC("unknown RPC type \(word >> 28)")
        }
        guard jsonSize <= payload.readableBytes else {
            throw SDLError.malformedRPC("JSON size \(jsonSize) overruns the \(payload.readableBytes) bytes after the header")
        }
        self.type = type
        self.functionID = word & 0x0FFF_FFFF
        self.correlationID = correlation
        self.json = payload.readBytes(length: jsonSize)!
        self.bulk = payload.readSlice(length: payload.readableBytes)!
    }

    public init(decoding bytes: [UInt8]) throws {
        try self.init(decoding: ByteBuffer(bytes: bytes))
    }

    /// Size of the encoded payload.
    public var encodedSize: Int { RPCMessage.headerSize + json.count + bulk.readableBytes }

    /// Appends the payload to `buffer`.
    public func write(to buffer: inout ByteBuffer) {
        buffer.writeInteger((UInt32(type.rawValue) << 28) | (functionID & 0x0FFF_FFFF))
        buffer.writeInteger(correlationID)
        buffer.writeInteger(UInt32(json.count))
        buffer.writeBytes(json)
        var bulk = bulk
        buffer.writeBuffer(&bulk)
    }

    public func encoded() -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: encodedSize)
        write(to: &buffer)
        return buffer
    }

    /// The JSON parameters as an object.
    public func parameters() throws(SDLError) -> [String: JSONValue] { try RPCParameters.parse(json) }

    public var name: String { FunctionID.name(functionID) }
}
