#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Reads a local file in bounded chunks at explicit offsets (`pread`), so no plugin ever needs the whole
/// file in memory. Thread-safe: `pread` keeps no shared file position.
///
/// A reader opened inside an upload (``Destination/upload(_:progress:)``) also carries its destination's
/// `bandwidth` limit: a plugin calls ``paceSending(_:)`` with each chunk it reads to send (or reads with
/// ``readToSend(at:into:)``), and every upload of the destination shares the limit. Reads to hash or check a
/// file are not paced.
public final class FileReader: Sendable {
    public let path: String
    private let fd: Int32
    /// The destination's bandwidth limit, when opened inside one of its uploads.
    private let pacing: SendPacing?

    public init(path: String) throws {
        self.path = path
        self.pacing = SendPacing.current
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileReader.openError(path) }
        self.fd = fd
    }

    /// Why `path` cannot be opened, from `errno` (an `open` or an `access` that just failed).
    static func openError(_ path: String) -> DestinationError {
        let code = POSIXErrorCode(rawValue: errno) ?? .EIO
        return DestinationError.permanent("cannot open \(path): \(String(cString: strerror(code.rawValue)))", code: "\(code)")
    }

    /// A reader of a file already opened (by a walk that does not follow links): it takes over `fd` and closes it.
    init(adopting fd: Int32, path: String) {
        self.path = path
        self.pacing = SendPacing.current
        self.fd = fd
    }

    deinit { close(fd) }

    /// `fstat` of the file read: the identity of what is read, whatever its path names now.
    func status() -> stat? {
        var st = stat()
        return fstat(fd, &st) == 0 ? st : nil
    }

    /// The file's current size (fstat).
    public func currentSize() throws -> Int64 {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw FileReader.lastError(path) }
        return Int64(st.st_size)
    }

    /// Reads up to `count` bytes at `offset`. Returns fewer only at the end of the file.
    public func read(at offset: Int64, count: Int) throws -> [UInt8] {
        guard count > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: count)
        var filled = 0
        try buffer.withUnsafeMutableBytes { raw in
            while filled < count {
                let n = pread(fd, raw.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw FileReader.lastError(path)
                }
                if n == 0 { break }
                filled += n
            }
        }
        if filled < count { buffer.removeSubrange(filled...) }
        return buffer
    }

    /// Reads into caller-owned memory; returns the number of bytes read (0 at end of file).
    public func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        while true {
            let n = pread(fd, buffer.baseAddress!, buffer.count, off_t(offset))
            if n < 0 {
                if errno == EINTR { continue }
                throw FileReader.lastError(path)
            }
            return n
        }
    }

    /// Waits, when the upload this reader was opened in has a bandwidth limit, until `bytes` just read may be sent
    /// (at once otherwise). Throws `CancellationError` when the task is cancelled while it waits.
    public func paceSending(_ bytes: Int) async throws {
        try await pacing?.pace(bytes)
    }

    /// Reads into caller-owned memory to send: ``read(at:into:)`` then ``paceSending(_:)``.
    public func readToSend(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) async throws -> Int {
        let n = try read(at: offset, into: buffer)
        try await paceSending(n)
        return n
    }

    /// The file as consecutive chunks of at most `chunkSize` bytes from `offset` to the end, each paced to send
    /// (``paceSending(_:)``).
    public func chunks(size chunkSize: Int, from offset: Int64 = 0) -> FileChunks {
        FileChunks(reader: self, chunkSize: chunkSize, offset: offset)
    }

    static func lastError(_ path: String) -> DestinationError {
        let code = errno
        let failure: FailureClass = (code == EINTR || code == EAGAIN) ? .retryable() : .permanent
        return DestinationError(failure, code: "errno-\(code)", "cannot read \(path): \(String(cString: strerror(code)))")
    }
}

/// The chunks of a file, read lazily with `pread` (see ``FileReader/chunks(size:from:)``).
public struct FileChunks: AsyncSequence, Sendable {
    public typealias Element = [UInt8]
    let reader: FileReader
    let chunkSize: Int
    let offset: Int64

    public struct AsyncIterator: AsyncIteratorProtocol {
        let reader: FileReader
        let chunkSize: Int
        var position: Int64

        public mutating func next() async throws -> [UInt8]? {
            let chunk = try reader.read(at: position, count: chunkSize)
            if chunk.isEmpty { return nil }
            try await reader.paceSending(chunk.count)
            position += Int64(chunk.count)
            return chunk
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(reader: reader, chunkSize: chunkSize, position: offset)
    }
}
