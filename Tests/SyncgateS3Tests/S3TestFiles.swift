import Crypto
import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing
@testable import SyncgateS3

/// Local files for tests and the UploadItems that describe them.
enum S3TestFiles {
    /// Deterministic pseudo-random bytes (xorshift), so every test's content differs from its neighbours'.
    static func bytes(_ count: Int, seed: UInt64) -> Data {
        var state = seed | 1
        var data = Data(count: count)
        data.withUnsafeMutableBytes { raw in
            let bytes = raw.bindMemory(to: UInt8.self)
            for index in 0..<count {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                bytes[index] = UInt8(truncatingIfNeeded: state)
            }
        }
        return data
    }

    static func sha256(_ data: Data) -> String { SigV4Signer.hex(Array(SHA256.hash(data: data))) }
    static func md5(_ data: Data) -> String { SigV4Signer.hex(Array(Insecure.MD5.hash(data: data))) }

    static func item(_ directory: TemporaryDirectory, _ relativePath: String, remoteName: String? = nil) throws -> UploadItem {
        let url = directory.file(relativePath)
        let data = try Data(contentsOf: url)
        // The file's own modification time, as the engine plans it: the plugin checks the file unchanged before
        // completing a multipart upload.
        let modified = try #require(FileStat.of(url.path)).modificationTime
        return UploadItem(
            source: "test", relativePath: relativePath, absolutePath: url.path, remoteName: remoteName ?? relativePath,
            size: Int64(data.count), modificationTime: modified, sha256: sha256(data), isArtwork: false)
    }
}
