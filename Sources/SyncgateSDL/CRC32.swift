import NIOCore

/// CRC-32 as zlib computes it (reflected polynomial 0xEDB88320, initial and final XOR 0xFFFFFFFF), which is
/// what a PutFile's `crc` holds. Slicing-by-8 tables keep it fast on large chunks.
public struct CRC32: Sendable {
    public private(set) var value: UInt32 = 0

    public init() {}

    static let tables: [[UInt32]] = {
        var tables = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = (c & 1) != 0 ? (0xEDB8_8320 ^ (c >> 1)) : (c >> 1) }
            tables[0][i] = c
        }
        for i in 0..<256 {
            for t in 1..<8 {
                let prev = tables[t - 1][i]
                tables[t][i] = (prev >> 8) ^ tables[0][Int(prev & 0xFF)]
            }
        }
        return tables
    }()

    /// Continues the checksum over more bytes.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        let flat = CRC32.flat
        var crc = ~value
        flat.withUnsafeBufferPointer { t in
            var i = 0
            let n = bytes.count
            while n - i >= 8 {
                let one = crc ^ (UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16 | UInt32(bytes[i + 3]) << 24)
                let two = UInt32(bytes[i + 4]) | UInt32(bytes[i + 5]) << 8 | UInt32(bytes[i + 6]) << 16 | UInt32(bytes[i + 7]) << 24
                crc = t[7 * 256 + Int(one & 0xFF)] ^ t[6 * 256 + Int((one >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((one >> 16) & 0xFF)] ^ t[4 * 256 + Int(one >> 24)]
                    ^ t[3 * 256 + Int(two & 0xFF)] ^ t[2 * 256 + Int((two >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((two >> 16) & 0xFF)] ^ t[Int(two >> 24)]
                i += 8
            }
            while i < n {
                crc = t[Int((crc ^ UInt32(bytes[i])) & 0xFF)] ^ (crc >> 8)
                i += 1
            }
        }
        value = ~crc
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

    /// The CRC-32 of A followed by B, from the CRC of A, the CRC of B and B's length (zlib's crc32_combine:
    /// multiplies by x^(8·length) in GF(2) with squared operator matrices).
    public static func combine(_ crcA: UInt32, _ crcB: UInt32, length: Int) -> UInt32 {
        guard length > 0 else { return crcA }
        func times(_ matrix: [UInt32], _ vector: UInt32) -> UInt32 {
            var sum: UInt32 = 0
            var vector = vector
            var index = 0
            while vector != 0 {
                if vector & 1 != 0 { sum ^= matrix[index] }
                vector >>= 1
                index += 1
            }
            return sum
        }
        func square(_ matrix: [UInt32]) -> [UInt32] { (0..<32).map { times(matrix, matrix[$0]) } }
        var odd = [UInt32](repeating: 0, count: 32)
        odd[0] = 0xEDB8_8320
        var row: UInt32 = 1
        for n in 1..<32 {
            odd[n] = row
            row <<= 1
        }
        var even = square(odd)  // 2 zero bits
        odd = square(even)  // 4 zero bits
        var crc = crcA
        var remaining = length
        repeat {
            even = square(odd)
            if remaining & 1 != 0 { crc = times(even, crc) }
            remaining >>= 1
            if remaining == 0 { break }
            odd = square(even)
            if remaining & 1 != 0 { crc = times(odd, crc) }
            remaining >>= 1
        } while remaining != 0
        return crc ^ crcB
    }

    static let flat: [UInt32] = tables.flatMap { $0 }

    /// The CRC-32 of `bytes`.
    public static func checksum<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        var crc = CRC32()
        crc.update(bytes)
        return crc.value
    }
}
