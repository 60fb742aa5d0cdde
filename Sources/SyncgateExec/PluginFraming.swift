import SyncgateJSON

/// How messages are framed on the plugin's pipes (docs/plugins.md, "Batches"): one JSON object per line, and, once a
/// plugin that declared `batch` has answered its `hello`, a line may also be a batch: a JSON array of one or more
/// messages, each exactly what a line of its own would hold, read in order. syncgate writes what it has to send at
/// one moment as one batch (a lone message as a plain object); a plugin may answer in batches or line by line.
enum PluginFraming {
    /// The most messages syncgate puts in one batch (a batch is also bounded by the line length).
    static let maxBatch = 512

    /// Parses a line's JSON; a line that is not JSON is a violation.
    static func json(_ line: ArraySlice<UInt8>) throws(PluginViolation) -> JSONValue {
        do {
            return try JSONParser.parse(line, maxDepth: PluginProtocol.maxDepth)
        } catch {
            throw .notJSON(PluginAnswer.excerpt(line))
        }
    }

    /// The answers on one line of the plugin's stdout: one, or a batch's when `batched` (the plugin declared
    /// `batch`). A batch from a plugin that did not declare it, an empty batch, or a batch holding anything but
    /// answer objects (a nested batch among them) breaks the protocol: the whole line is refused.
    static func answers(_ line: ArraySlice<UInt8>, batched: Bool) throws(PluginViolation) -> [PluginAnswer] {
        let value = try json(line)
        guard case .array(let messages) = value else { return [try PluginAnswer.parse(value, line: line)] }
        guard batched else {
            throw .malformed("a batch (a JSON array) from a plugin that did not declare the capability \"batch\": \(PluginAnswer.excerpt(line))")
        }
        guard !messages.isEmpty else { throw .malformed("an empty batch (a batch holds one or more answers): \(PluginAnswer.excerpt(line))") }
        var answers: [PluginAnswer] = []
        answers.reserveCapacity(messages.count)
        for (index, message) in messages.enumerated() {
            guard case .object = message else {
                throw .malformed("message \(index + 1) of a batch is not an answer object (batches do not nest): \(PluginAnswer.excerpt(line))")
            }
            answers.append(try PluginAnswer.parse(message, line: line))
        }
        return answers
    }

    /// The bytes that carry `messages` (each a compact JSON object, no newline) to the plugin: with `batched`, as
    /// few lines as the line length and ``maxBatch`` allow (a lone message as a plain object); else a line each.
    static func bytes(_ messages: [String], batched: Bool) -> [UInt8] {
        var out: [UInt8] = []
        guard batched, messages.count > 1 else {
            for message in messages {
                out.append(contentsOf: message.utf8)
                out.append(0x0A)
            }
            return out
        }
        var start = 0
        while start < messages.count {
            var end = start
            var length = 2
            while end < messages.count, end - start < maxBatch {
                let next = messages[end].utf8.count + (end > start ? 1 : 0)
                if end > start, length + next > PluginProtocol.maxLineBytes { break }
                length += next
                end += 1
            }
            if end - start == 1 {
                out.append(contentsOf: messages[start].utf8)
            } else {
                out.append(0x5B)
                for index in start..<end {
                    if index > start { out.append(0x2C) }
                    out.append(contentsOf: messages[index].utf8)
                }
                out.append(0x5D)
            }
            out.append(0x0A)
            start = end
        }
        return out
    }
}
