import CZlib
import NIOCore

/// CRC-32 as zlib computes it (reflected polynomial 0xEDB88320, initial and final XOR 0xFFFFFFFF), which is
/// what a PutFile's `crc` holds. Computed by the system's zlib.
public struct CRC32: Sendable {
    public private(set) var value: UInt32 = 0

    public init() {}

    /// Continues the checksum over more bytes.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        value = UInt32(truncatingIfNeeded: crc32_z(uLong(value), base.assumingMemoryBound(to: Bytef.self), bytes.count))
    }

    public mutating func update<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        if let done: Void = bytes.withContiguousStorageIfAvailable({ update(UnsafeRawBufferPointer($0)) }) {
            return done
        }
        let copy = Array(bytes)
        copy.withUnsafeBytes { update($0) }
    }

    public mutating func update(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { update($0) }
    }

    /// The CRC-32 of A followed by B, from the CRC of A, the CRC of B and B's length (zlib's crc32_combine).
    public static func combine(_ crcA: UInt32, _ crcB: UInt32, length: Int) -> UInt32 {
        guard length > 0 else { return crcA }
        return UInt32(truncatingIfNeeded: crc32_combine(uLong(crcA), uLong(crcB), off_t(length)))
    }

    /// The CRC-32 of `bytes`.
    public static func checksum<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        var crc = CRC32()
        crc.update(bytes)
        return crc.value
    }
}
