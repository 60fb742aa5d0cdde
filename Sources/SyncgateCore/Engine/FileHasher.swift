import Crypto
import Foundation

/// SHA-256 of a file, streamed in bounded chunks.
public enum FileHasher {
    static let chunkSize = 1 << 20

    /// Lower-case hex SHA-256 of the file's content. `sizeHint` (the size the scan saw) sizes the read buffer,
    /// so that hashing many small files does not map and fault in a megabyte each time.
    public static func sha256(path: String, sizeHint: Int64? = nil) throws -> String {
        try sha256(reader: FileReader(path: path), sizeHint: sizeHint)
    }

    /// SHA-256 of what an open reader reads (see ``sha256(path:sizeHint:)``).
    static func sha256(reader: FileReader, sizeHint: Int64? = nil) throws -> String {
        var hasher = SHA256()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bufferSize(for: sizeHint), alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while true {
            let n = try reader.read(at: offset, into: buffer)
            if n == 0 { break }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            offset += Int64(n)
        }
        return hex(hasher.finalize())
    }

    /// A read buffer for a file of about `size` bytes: the whole file (and one more read for the end) when small,
    /// at most ``chunkSize``.
    public static func bufferSize(for size: Int64?) -> Int {
        guard let size else { return chunkSize }
        return Int(min(Int64(chunkSize), max(4096, size + 1)))
    }

    private static let digits = Array("0123456789abcdef".utf8)

    /// Lower-case hex of a digest.
    public static func hex<D: Sequence>(_ digest: D) -> String where D.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for byte in digest {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
