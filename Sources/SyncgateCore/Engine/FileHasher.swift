import Crypto
import Foundation

/// SHA-256 of a file, streamed in bounded chunks.
public enum FileHasher {
    static let chunkSize = 1 << 20

    /// Lower-case hex SHA-256 of the file's content.
    public static func sha256(path: String) throws -> String {
        let reader = try FileReader(path: path)
        var hasher = SHA256()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while true {
            let n = try reader.read(at: offset, into: buffer)
            if n == 0 { break }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            offset += Int64(n)
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
