import Crypto
import Foundation
import SyncgateCore

/// MD5 (for `Content-MD5` and ETag checks) and optionally SHA-256 (for `x-amz-content-sha256`) of a byte range
/// of a file, read in 256 KiB chunks: the file is never held in memory.
struct S3RangeDigest: Sendable {
    var md5: [UInt8]
    var sha256Hex: String?

    var md5Base64: String { Data(md5).base64EncodedString() }
    var md5Hex: String { SigV4Signer.hex(md5) }

    static let chunkSize = 256 << 10

    static func compute(_ reader: FileReader, offset: Int64, length: Int64, sha256: Bool) throws -> S3RangeDigest {
        var md5 = Insecure.MD5()
        var sha = sha256 ? SHA256() : nil
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var done: Int64 = 0
        while done < length {
            let want = Int(min(Int64(chunkSize), length - done))
            let got = try reader.read(at: offset + done, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]))
            if got == 0 {
                throw FileChangedError(path: reader.path, detail: "it got shorter than \(offset + length) bytes")
            }
            let slice = UnsafeRawBufferPointer(rebasing: buffer[0..<got])
            md5.update(bufferPointer: slice)
            sha?.update(bufferPointer: slice)
            done += Int64(got)
        }
        return S3RangeDigest(md5: Array(md5.finalize()), sha256Hex: sha.map { SigV4Signer.hex(Array($0.finalize())) })
    }
}

extension S3RangeDigest {
    /// MD5 of bytes in memory (small request bodies such as DeleteObjects).
    static func md5(_ data: Data) -> [UInt8] { Array(Insecure.MD5.hash(data: data)) }
}
