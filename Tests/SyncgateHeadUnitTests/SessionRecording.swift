import Foundation
import SyncgateJSON
import SyncgateSDL
import SyncgateTestSupport

/// The recorded session with a real SDL Core 8.2.0 (`../shared/testdata/sdl/core-8.2.0-session.txt`), one
/// frame per line. Payloads over 4,096 bytes were cut in the recording; ``completed()`` regenerates the
/// bulk data of the cut PutFiles from the test patterns the recording client used and proves each
/// regeneration right with the CRC-32 the recorded JSON carries.
struct SessionRecording {
    struct Frame {
        var time: Double
        /// Client to Core.
        var outbound: Bool
        var header: [UInt8]
        var payload: [UInt8]
        /// Bytes the recording left out of the payload.
        var missing: Int
        var note: String
        var decoded: FrameHeader { get throws { try FrameHeader.decode(header) } }
    }

    var frames: [Frame]

    static var sessionFile: URL? { TestPaths.shared("testdata/sdl/core-8.2.0-session.txt") }
    static var responsesFile: URL? { TestPaths.shared("testdata/sdl/core-8.2.0-responses.txt") }
    static var available: Bool { sessionFile.map { FileManager.default.fileExists(atPath: $0.path) } ?? false }

    static func load() throws -> SessionRecording {
        guard let url = sessionFile else { throw RecordingError("../shared is absent") }
        let text = try String(contentsOf: url, encoding: .utf8)
        var frames: [Frame] = []
        for line in text.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { continue }
            let parts = trimmed.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            guard parts.count == 3, let time = Double(parts[0]), parts[1] == ">>" || parts[1] == "<<" else {
                throw RecordingError("unreadable line: \(trimmed.prefix(80))")
            }
            var rest = String(parts[2])
            if rest.hasSuffix(" |") { rest += " " }
            guard rest.hasPrefix("hdr="), let space = rest.firstIndex(of: " "),
                let bar = rest.range(of: " | ")
            else { throw RecordingError("no header in: \(trimmed.prefix(80))") }
            let header = try hex(String(rest[rest.index(rest.startIndex, offsetBy: 4)..<space]))
            let afterBar = rest[bar.upperBound...]
            var payloadText = String(afterBar.prefix { $0 != " " })
            var note = String(afterBar.dropFirst(payloadText.count)).trimmingCharacters(in: .whitespaces)
            var missing = 0
            if let cut = payloadText.range(of: "...(+") {
                let count = payloadText[cut.upperBound...].prefix { $0.isNumber }
                missing = Int(count) ?? 0
                payloadText = String(payloadText[..<cut.lowerBound])
            } else if note.hasPrefix("...(+") {
                let count = note.dropFirst(5).prefix { $0.isNumber }
                missing = Int(count) ?? 0
                note = String(note.drop { $0 != ")" }.dropFirst()).trimmingCharacters(in: .whitespaces)
            }
            frames.append(
                Frame(time: time, outbound: parts[1] == ">>", header: header, payload: try hex(payloadText), missing: missing, note: note))
        }
        return SessionRecording(frames: frames)
    }

    static func hex(_ text: String) throws -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count / 2)
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex) ?? text.endIndex
            guard let byte = UInt8(text[index..<next], radix: 16) else { throw RecordingError("bad hex near \(text[index..<next])") }
            bytes.append(byte)
            index = next
        }
        return bytes
    }

    /// The bytes of file `name` at `offset` as the recording client generated them.
    static func pattern(_ name: String, offset: Int, count: Int) -> [UInt8] {
        switch name {
        case "big.bin": return (0..<count).map { UInt8(((offset + $0) * 7) % 251) }
        default: return (0..<count).map { UInt8((offset + $0) % 256) }
        }
    }

    /// The frames with every cut payload regenerated. Throws when a regeneration does not match the CRC the
    /// recorded request carries.
    func completed() throws -> [Frame] {
        var out = frames
        var index = 0
        while index < out.count {
            let frame = out[index]
            let header = try frame.decoded
            guard frame.outbound, frame.missing > 0 || header.frameType == .first else {
                index += 1
                continue
            }
            // Collect this message's frames.
            var members = [index]
            if header.frameType == .first {
                var next = index + 1
                while next < out.count, members.count < 1000 {
                    let h = try out[next].decoded
                    if out[next].outbound && h.messageID == header.messageID && h.frameType == .consecutive {
                        members.append(next)
                        if h.frameInfo == 0 { break }
                    }
                    next += 1
                }
            }
            let dataFrames = header.frameType == .first ? Array(members.dropFirst()) : members
            let total = try dataFrames.reduce(0) { $0 + Int(try out[$1].decoded.dataSize) }
            let prefix = out[dataFrames[0]].payload
            // The JSON sits at the start of the first data frame, within the recorded 4,096 bytes.
            let jsonSize = Int(prefix[8]) << 24 | Int(prefix[9]) << 16 | Int(prefix[10]) << 8 | Int(prefix[11])
            let json = Array(prefix[12..<(12 + jsonSize)])
            let params = try RPCParameters.parse(json)
            guard let name = params["syncFileName"]?.string, let crc = params["crc"]?.int64 else {
                throw RecordingError("cannot regenerate a cut frame that is not a PutFile with a crc")
            }
            let offset = Int(params["offset"]?.int64 ?? 0)
            let bulkSize = total - 12 - jsonSize
            let bulk = SessionRecording.pattern(name, offset: offset, count: bulkSize)
            guard CRC32.checksum(bulk) == UInt32(crc) else {
                throw RecordingError("regenerated \(name) at \(offset) does not match the recorded crc \(crc)")
            }
            let whole = Array(prefix[0..<(12 + jsonSize)]) + bulk
            guard Array(whole.prefix(prefix.count)) == prefix else {
                throw RecordingError("regenerated \(name) at \(offset) differs from the recorded prefix")
            }
            var position = 0
            for member in dataFrames {
                let size = Int(try out[member].decoded.dataSize)
                out[member].payload = Array(whole[position..<(position + size)])
                out[member].missing = 0
                position += size
            }
            index = (members.last ?? index) + 1
        }
        return out
    }

    /// Core's decoded answers from `core-8.2.0-responses.txt`, by correlation id (only plain JSON lines).
    static func recordedResponses() throws -> [UInt32: [String: JSONValue]] {
        guard let url = responsesFile else { throw RecordingError("../shared is absent") }
        var answers: [UInt32: [String: JSONValue]] = [:]
        for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") {
            guard let arrow = line.range(of: "-> "), let brace = line[arrow.upperBound...].firstIndex(of: "{") else { continue }
            let head = line[arrow.upperBound..<brace]
            var corr: UInt32?
            if let range = head.range(of: "corr=") { corr = UInt32(head[range.upperBound...].prefix { $0.isNumber }) }
            if corr == nil, let range = line[..<arrow.lowerBound].range(of: "corr=") {
                corr = UInt32(line[range.upperBound...].prefix { $0.isNumber })
            }
            guard let corr, let object = try? RPCParameters.parse(Array(line[brace...].utf8)) else { continue }
            answers[corr] = object
        }
        return answers
    }

    struct RecordingError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
