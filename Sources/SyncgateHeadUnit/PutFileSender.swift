import Foundation
import NIOCore
import SyncgateCore
import SyncgateJSON
import SyncgateSDL

/// Sends one file as ordered PutFiles at increasing offsets, each chunk sized so that the RPC header, the
/// JSON and the chunk fit one frame of the negotiated MTU, each with the CRC-32 of its own bytes, with up to
/// `window` chunks in flight. The file is read chunk by chunk (never whole), each chunk straight into the buffer
/// the socket writes; the JSON is built once per file (``PutFileTemplate``) and only its numbers change per chunk.
struct PutFileSender {
    struct Outcome: Sendable {
        var crc: UInt32
        var spaceAvailable: Int64?
        var size: Int64
        /// The SHA-256 of the bytes sent, when asked for.
        var sha256: String?
    }

    let connection: SDLConnection
    let window: Int

    static func parameters(
        name: String, fileType: String, persistent: Bool, offset: Int64, length: Int64, crc: UInt32
    ) -> [String: JSONValue] {
        [
            "syncFileName": .string(name), "fileType": .string(fileType), "persistentFile": .bool(persistent),
            "systemFile": .bool(false), "offset": .int(offset), "length": .int(length), "crc": .int(Int64(crc)),
        ]
    }

    /// Bulk bytes per PutFile for a frame payload limit of `mtu`: what is left after the 12-byte RPC header and
    /// the largest JSON this file's requests can have.
    static func chunkSize(mtu: Int, template: PutFileTemplate, size: Int64) -> Int {
        mtu - RPCMessage.headerSize - template.largestSize(fileSize: size)
    }

    /// Reads up to `count` bytes at `offset` straight into a buffer (pread, no intermediate array).
    static func read(_ reader: FileReader, at offset: Int64, count: Int) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        try read(reader, at: offset, count: count, into: &buffer)
        return buffer
    }

    /// Reads into `buffer` after its readable bytes (the caller clears a buffer it reuses).
    static func read(_ reader: FileReader, at offset: Int64, count: Int, into buffer: inout ByteBuffer) throws {
        _ = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
            var filled = 0
            while filled < count {
                let n = try reader.read(at: offset + Int64(filled), into: UnsafeMutableRawBufferPointer(rebasing: raw[filled..<count]))
                if n == 0 { break }
                filled += n
            }
            return filled
        }
    }

    /// Sends in batches: once no more than half the window is still unanswered, it reads, checks (CRC-32) and
    /// sends as many chunks as fill the window again, handing them to the event loop and to the hasher at once, and
    /// then waits for the answers (woken once per batch, or at once when one fails). At most `window` requests are
    /// ever unanswered, as before; the answers are acted on in the order the requests went.
    func send(
        remoteName: String, reader: FileReader, size: Int64, persistent: Bool, hashing: Bool = false,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> Outcome {
        let fileType = SDLFileType.forName(remoteName)
        let template = PutFileTemplate(name: remoteName, fileType: fileType, persistent: persistent)
        let mtu = await connection.mtu
        let chunk = PutFileSender.chunkSize(mtu: mtu, template: template, size: size)
        guard chunk >= 256 else {
            throw DestinationError.permanent("the head unit's MTU of \(mtu) bytes leaves no room for file data", code: "protocol-error")
        }
        let window = max(1, self.window)
        let lowWater = window / 2
        var whole: UInt32?
        // Chunks are read in order, so a new file's hash is taken from them as they are sent, on another thread.
        let hasher = hashing ? ChunkHasher(backlog: 2 * window) : nil
        let answers = ResponseWindow()
        var offset: Int64 = 0
        var nextSequence = 0
        var inFlight: [(sequence: Int, start: Int64, end: Int64, bulk: ByteBuffer)] = []
        // The buffers of answered chunks, read into again: once the socket and the hasher are done with one, it is
        // this sender's alone and `clear()` keeps its memory (a new 128 KiB buffer costs a page fault per 4 KiB
        // page); one still shared gets fresh memory from `clear()`, as value semantics require.
        var spares: [ByteBuffer] = []
        var space: Int64?
        progress(0)
        while offset < size || !inFlight.isEmpty {
            if offset < size && inFlight.count <= lowWater {
                var batch: [SDLConnection.PutFileChunk] = []
                while offset < size && inFlight.count + batch.count < window {
                    var bulk = spares.isEmpty ? ByteBufferAllocator().buffer(capacity: chunk) : spares.removeFirst()
                    bulk.clear()
                    try PutFileSender.read(reader, at: offset, count: Int(min(Int64(chunk), size - offset)), into: &bulk)
                    guard bulk.readableBytes > 0 else {
                        throw DestinationError.retryable("\(reader.path) shrank while it was being sent", code: "file-changed")
                    }
                    try await reader.paceSending(bulk.readableBytes)
                    var crc = CRC32()
                    crc.update(bulk)
                    whole = whole.map { CRC32.combine($0, crc.value, length: bulk.readableBytes) } ?? crc.value
                    batch.append(SDLConnection.PutFileChunk(
                        offset: offset, length: offset == 0 ? size : Int64(bulk.readableBytes), crc: crc.value,
                        sequence: nextSequence, bulk: bulk))
                    inFlight.append((nextSequence, offset, offset + Int64(bulk.readableBytes), bulk))
                    nextSequence += 1
                    offset += Int64(bulk.readableBytes)
                }
                await hasher?.add(batch.map(\.bulk))
                try await connection.sendPutFiles(batch, template: template, window: answers)
                continue
            }
            // Wait for enough answers to refill the window (or for all of them at the end).
            let target = offset < size ? inFlight[inFlight.count - lowWater - 1].sequence : inFlight[inFlight.count - 1].sequence
            try await answers.wait(for: target)
            while let first = inFlight.first, let result = answers.take(first.sequence) {
                spares.append(inFlight.removeFirst().bulk)
                space = try await check(result, remoteName: remoteName, start: first.start, size: size) ?? space
                progress(first.end)
            }
            // A failure further on ends the upload without waiting for the answers before it.
            if let failed = answers.firstFailure, let entry = inFlight.first(where: { $0.sequence == failed }),
                let result = answers.take(failed)
            {
                _ = try await check(result, remoteName: remoteName, start: entry.start, size: size)
            }
        }
        guard try reader.currentSize() == size else {
            throw DestinationError.retryable("\(reader.path) changed size while it was being sent", code: "file-changed")
        }
        await connection.noteStored(remoteName, spaceAvailable: space)
        return Outcome(crc: whole ?? 0, spaceAvailable: space, size: size, sha256: await hasher?.finalize())
    }

    /// The answer to the PutFile of the chunk at `start`: its `spaceAvailable` when it succeeded; otherwise the
    /// error it means (thrown).
    private func check(_ result: Result<SDLResponse, any Error>, remoteName: String, start: Int64, size: Int64) async throws -> Int64? {
        let response = try result.get()
        guard response.code.isSuccess else {
            await connection.noteNoneRejectionIf(response.code)
            await connection.noteResult(response.code)
            throw ResultClassifier.error(
                response.code, info: response.info, function: "PutFile",
                subject: "\"\(remoteName)\" at offset \(start) of \(size)", hmiLevel: await connection.hmiLevel)
        }
        return response.spaceAvailable
    }
}
