import Foundation
import NIOCore
import SyncgateCore
import SyncgateJSON
import SyncgateSDL

/// Sends one file as ordered PutFiles at increasing offsets, each chunk sized so that the RPC header, the
/// JSON and the chunk fit one frame of the negotiated MTU, each with the CRC-32 of its own bytes, with up to
/// `window` chunks in flight. The file is read chunk by chunk (never whole).
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
    static func chunkSize(mtu: Int, name: String, fileType: String, persistent: Bool, size: Int64) -> Int {
        let worst = parameters(name: name, fileType: fileType, persistent: persistent, offset: size, length: size, crc: .max)
        let json = RPCParameters.encode(worst).count
        return mtu - RPCMessage.headerSize - json
    }

    /// Reads up to `count` bytes at `offset` straight into a buffer (pread, no intermediate array).
    static func read(_ reader: FileReader, at offset: Int64, count: Int) throws -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        _ = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
            var filled = 0
            while filled < count {
                let n = try reader.read(at: offset + Int64(filled), into: UnsafeMutableRawBufferPointer(rebasing: raw[filled..<count]))
                if n == 0 { break }
                filled += n
            }
            return filled
        }
        return buffer
    }

    func send(
        remoteName: String, reader: FileReader, size: Int64, persistent: Bool, hashing: Bool = false,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> Outcome {
        let fileType = SDLFileType.forName(remoteName)
        let mtu = await connection.mtu
        let chunk = PutFileSender.chunkSize(mtu: mtu, name: remoteName, fileType: fileType, persistent: persistent, size: size)
        guard chunk >= 256 else {
            throw DestinationError.permanent("the head unit's MTU of \(mtu) bytes leaves no room for file data", code: "protocol-error")
        }
        var whole: UInt32?
        // Chunks are read in order, so a new file's hash is taken from them as they are sent, on another thread.
        let hasher = hashing ? ChunkHasher(backlog: 2 * window) : nil
        var offset: Int64 = 0
        var inFlight: [(future: EventLoopFuture<RPCMessage>, start: Int64, end: Int64)] = []
        var space: Int64?
        var acknowledged: Int64 = 0
        progress(0)
        while offset < size || !inFlight.isEmpty {
            if offset < size && inFlight.count < window {
                let bulk = try PutFileSender.read(reader, at: offset, count: Int(min(Int64(chunk), size - offset)))
                guard bulk.readableBytes > 0 else {
                    throw DestinationError.retryable("\(reader.path) shrank while it was being sent", code: "file-changed")
                }
                try await reader.paceSending(bulk.readableBytes)
                var crc = CRC32()
                crc.update(bulk)
                await hasher?.add(bulk)
                whole = whole.map { CRC32.combine($0, crc.value, length: bulk.readableBytes) } ?? crc.value
                let params = PutFileSender.parameters(
                    name: remoteName, fileType: fileType, persistent: persistent, offset: offset,
                    length: offset == 0 ? size : Int64(bulk.readableBytes), crc: crc.value)
                let future = try await connection.send(FunctionID.putFile, params, bulk: bulk, service: ServiceType.bulk)
                inFlight.append((future, offset, offset + Int64(bulk.readableBytes)))
                offset += Int64(bulk.readableBytes)
                continue
            }
            let entry = inFlight.removeFirst()
            let response = try SDLResponse(try await FutureWait.value(of: entry.future))
            guard response.code.isSuccess else {
                await connection.noteNoneRejectionIf(response.code)
                await connection.noteResult(response.code)
                throw ResultClassifier.error(
                    response.code, info: response.info, function: "PutFile",
                    subject: "\"\(remoteName)\" at offset \(entry.start) of \(size)", hmiLevel: await connection.hmiLevel)
            }
            space = response.spaceAvailable ?? space
            acknowledged = entry.end
            progress(acknowledged)
        }
        guard try reader.currentSize() == size else {
            throw DestinationError.retryable("\(reader.path) changed size while it was being sent", code: "file-changed")
        }
        await connection.noteStored(remoteName, spaceAvailable: space)
        return Outcome(crc: whole ?? 0, spaceAvailable: space, size: size, sha256: await hasher?.finalize())
    }
}
