#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import Foundation
import SyncgateCore

/// The SHA-256 of a copy under the local destination's folder (`syncgate check --checksum`), read in chunks of
/// 1 MiB: its folders are reached as an upload reaches them (never through a link) and the file is opened with
/// `O_NOFOLLOW`.
enum LocalCopyHasher {
    static let chunkSize = 1 << 20

    /// The hex SHA-256 of the copy `name`, nil when there is no regular file under that name.
    static func sha256(of name: String, in tree: LocalTree) throws -> String? {
        let (folderPath, leaf) = LocalDestination.split(name)
        guard let folder = try tree.folder(folderPath, create: false) else { return nil }
        let fd = openat(folder.descriptor, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT || errno == ELOOP { return nil }
            throw tree.failure(errno, "cannot open \(tree.display(name))", at: .file)
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        var hasher = SHA256()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = read(fd, buffer.baseAddress, chunkSize)
            if n < 0 {
                if errno == EINTR { continue }
                throw tree.failure(errno, "cannot read \(tree.display(name))", at: .file)
            }
            if n == 0 { break }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
