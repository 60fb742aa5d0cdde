import NIOCore
import SyncgateJSON

/// The JSON parameters of one file's PutFiles, built once per file: from one chunk to the next only `crc`, `length`
/// and `offset` change, and they are written as digits between pieces made at the start. The text is byte for byte
/// what ``RPCParameters/encode(_:)`` makes of ``PutFileSender/parameters(name:fileType:persistent:offset:length:crc:)``
/// (compact, keys sorted: `crc`, `fileType`, `length`, `offset`, `persistentFile`, `syncFileName`, `systemFile`),
/// which the tests check for edge offsets, lengths and names.
struct PutFileTemplate: Sendable {
    /// `{"crc":`
    private let beforeCRC: [UInt8]
    /// `,"fileType":"BINARY","length":`
    private let beforeLength: [UInt8]
    /// `,"offset":`
    private let beforeOffset: [UInt8]
    /// `,"persistentFile":false,"syncFileName":"name","systemFile":false}`
    private let tail: [UInt8]

    init(name: String, fileType: String, persistent: Bool) {
        beforeCRC = Array(#"{"crc":"#.utf8)
        beforeLength = Array(#","fileType":"#.utf8) + Array(JSONText.string(fileType).utf8) + Array(#","length":"#.utf8)
        beforeOffset = Array(#","offset":"#.utf8)
        tail = Array(#","persistentFile":"#.utf8) + Array((persistent ? "true" : "false").utf8)
            + Array(#","syncFileName":"#.utf8) + Array(JSONText.string(name).utf8) + Array(#","systemFile":false}"#.utf8)
    }

    /// Bytes of the JSON for these values.
    func size(offset: Int64, length: Int64, crc: UInt32) -> Int {
        beforeCRC.count + beforeLength.count + beforeOffset.count + tail.count
            + PutFileTemplate.digits(Int64(crc)) + PutFileTemplate.digits(length) + PutFileTemplate.digits(offset)
    }

    /// The largest JSON any PutFile of a file of `size` bytes can have (offset and length at most the size).
    func largestSize(fileSize size: Int64) -> Int {
        self.size(offset: size, length: size, crc: .max)
    }

    /// Appends the JSON for these values to `buffer`.
    func write(offset: Int64, length: Int64, crc: UInt32, to buffer: inout ByteBuffer) {
        buffer.writeBytes(beforeCRC)
        PutFileTemplate.writeDecimal(Int64(crc), to: &buffer)
        buffer.writeBytes(beforeLength)
        PutFileTemplate.writeDecimal(length, to: &buffer)
        buffer.writeBytes(beforeOffset)
        PutFileTemplate.writeDecimal(offset, to: &buffer)
        buffer.writeBytes(tail)
    }

    /// The JSON for these values.
    func bytes(offset: Int64, length: Int64, crc: UInt32) -> [UInt8] {
        var buffer = ByteBufferAllocator().buffer(capacity: size(offset: offset, length: length, crc: crc))
        write(offset: offset, length: length, crc: crc, to: &buffer)
        return buffer.readBytes(length: buffer.readableBytes) ?? []
    }

    /// Characters of `value` in decimal (with its sign).
    static func digits(_ value: Int64) -> Int {
        (value < 0 ? 1 : 0) + digitCount(value.magnitude)
    }

    private static func digitCount(_ value: UInt64) -> Int {
        var count = 1
        var rest = value / 10
        while rest > 0 {
            count += 1
            rest /= 10
        }
        return count
    }

    /// `value` in decimal, as JSON writes an integer.
    static func writeDecimal(_ value: Int64, to buffer: inout ByteBuffer) {
        if value < 0 { buffer.writeInteger(UInt8(ascii: "-")) }
        var rest = value.magnitude
        let count = digitCount(rest)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
            var index = count
            repeat {
                index -= 1
                raw[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while index > 0
            return count
        }
    }
}
