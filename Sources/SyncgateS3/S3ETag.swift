import Crypto
import Foundation
import SyncgateCore

/// An S3 entity tag, read as the checksum the server computed: a plain ETag of an object sent in one PUT (without
/// SSE-KMS or SSE-C) is the MD5 of its bytes; a multipart one is `MD5(MD5(part 1) ... MD5(part N))-N`.
struct S3ETag: Sendable, Hashable, CustomStringConvertible {
    /// The tag without quotes or `W/`, lower-cased.
    var value: String

    init(_ header: String) {
        var text = header.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("W/") { text.removeFirst(2) }
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = String(text.dropFirst().dropLast()) }
        value = text.lowercased()
    }

    var description: String { value }

    /// Whether the tag is a plain MD5 (32 hex digits).
    var isMD5: Bool { S3ETag.isHex32(value[...]) }

    /// The number of parts of a multipart tag (`<32 hex>-N`), nil for any other form.
    var multipartCount: Int? {
        guard let dash = value.firstIndex(of: "-"), S3ETag.isHex32(value[..<dash]),
            let count = Int(value[value.index(after: dash)...]), count >= 1, count <= Int(S3MultipartConfig.maximumParts)
        else { return nil }
        return count
    }

    private static func isHex32(_ text: Substring) -> Bool {
        text.utf8.count == 32 && text.allSatisfy(\.isHexDigit)
    }

    /// The multipart tag of parts whose MD5s are `partMD5s` (in part order).
    static func multipart(partMD5s: [[UInt8]]) -> S3ETag {
        var md5 = Insecure.MD5()
        for part in partMD5s { md5.update(data: part) }
        return S3ETag(SigV4Signer.hex(Array(md5.finalize())) + "-\(partMD5s.count)")
    }

    /// The multipart tag the file's bytes would have as parts of `partSize`, read from disk part by part.
    static func multipart(of reader: FileReader, size: Int64, partSize: Int64) throws -> S3ETag {
        var md5s: [[UInt8]] = []
        var offset: Int64 = 0
        repeat {
            let length = min(partSize, size - offset)
            md5s.append(try S3RangeDigest.compute(reader, offset: offset, length: length, sha256: false).md5)
            offset += length
            try Task.checkCancellation()
        } while offset < size
        return multipart(partMD5s: md5s)
    }

    /// The MD5 an ETag stands for, as bytes (nil when it is not a plain MD5).
    var md5Bytes: [UInt8]? {
        guard isMD5 else { return nil }
        var bytes: [UInt8] = []
        var index = value.startIndex
        while index < value.endIndex {
            let next = value.index(index, offsetBy: 2)
            guard let byte = UInt8(value[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }
}
