import NIOCore
import SyncgateCore

/// A byte range of a local file as an async sequence of `ByteBuffer`s, read with `pread` on demand (the HTTP
/// client pulls the next chunk when it can write it), so a body of any size costs one chunk of memory.
/// Fails with ``FileChangedError`` (instead of sending fewer bytes) when the file got shorter than the range.
struct S3FileBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let reader: FileReader
    let offset: Int64
    let length: Int64
    let chunkSize: Int
    /// Called with the number of bytes of this range handed to the client so far.
    let progress: @Sendable (Int64) -> Void

    struct AsyncIterator: AsyncIteratorProtocol {
        let body: S3FileBody
        var sent: Int64 = 0
        let allocator = ByteBufferAllocator()

        mutating func next() async throws -> ByteBuffer? {
            guard sent < body.length else { return nil }
            try Task.checkCancellation()
            let want = Int(Swift.min(Int64(body.chunkSize), body.length - sent))
            var buffer = allocator.buffer(capacity: want)
            let reader = body.reader
            let position = body.offset + sent
            let got = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { raw in
                try reader.read(at: position, into: UnsafeMutableRawBufferPointer(rebasing: raw.prefix(want)))
            }
            if got == 0 {
                throw FileChangedError(path: reader.path, detail: "it got shorter than \(body.offset + body.length) bytes")
            }
            try await reader.paceSending(got)
            sent += Int64(got)
            body.progress(sent)
            return buffer
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(body: self) }
}
