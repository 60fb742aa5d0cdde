import Foundation
import SyncgateCore
import SyncgateJSON

/// The external plugin protocol (docs/plugins.md): versions, limits, and how its messages read.
public enum PluginProtocol {
    /// The protocol versions this syncgate speaks.
    public static let versions = [1]
    /// The longest line either side may write, newline excluded.
    public static let maxLineBytes = 1 << 20
    /// The deepest nesting of arrays and objects an answer may hold.
    static let maxDepth = 64
    /// The most bytes one `want` may ask for (a plugin asks again for more).
    public static let maxWant: Int64 = 16 << 20
    /// The prefix of a plugin program found by a destination's `type` (`syncgate-destination-NAME`).
    public static let programPrefix = "syncgate-destination-"
}

/// What a plugin says it can do in its `hello` (the abilities of a ``Destination``).
public struct PluginCapabilities: Sendable, Hashable {
    public var namesDistinct = false
    public var listingAuthoritative = false
    public var resendHarmless = false
    public var batchDelete = false
    public var existingCopy = false
    public var probe = false
    public var list = false
    public var delete = false
    /// The plugin answers a `put` carrying `fault` with an error of that class and scope (for `plugin check`).
    public var faults = false
    /// The plugin paces its reads of a file by `bandwidth`: for a put carrying `"paced": true` it asks (`want`)
    /// before sending each piece of the file and sends it once granted.
    public var paces = false
    /// The plugin speaks batches (docs/plugins.md, "Batches"): after its `hello` answer, a line on either side may be a
    /// JSON array of messages. Only declared to a syncgate whose `hello` carried `"batch": true`.
    public var batch = false
    /// Only one instance of a fleet may write to the plugin's destination at a time (it appends, or checks then
    /// writes): on a shared ledger one instance leads the destination, as it leads a head unit or a sheet.
    public var oneWriter = false

    public init() {}

    init(_ value: JSONValue?) {
        func flag(_ key: String) -> Bool { value?[key]?.bool ?? false }
        namesDistinct = flag("names_distinct")
        listingAuthoritative = flag("listing_authoritative")
        resendHarmless = flag("resend_harmless")
        batchDelete = flag("batch_delete")
        existingCopy = flag("existing_copy")
        probe = flag("probe")
        list = flag("list")
        delete = flag("delete")
        oneWriter = flag("one_writer")
        faults = flag("faults")
        paces = flag("paces")
        batch = flag("batch")
    }

    /// The names as the protocol spells them, for reports.
    public var names: [String] {
        var names: [String] = []
        if namesDistinct { names.append("names_distinct") }
        if listingAuthoritative { names.append("listing_authoritative") }
        if resendHarmless { names.append("resend_harmless") }
        if batchDelete { names.append("batch_delete") }
        if existingCopy { names.append("existing_copy") }
        if probe { names.append("probe") }
        if list { names.append("list") }
        if delete { names.append("delete") }
        if faults { names.append("faults") }
        if paces { names.append("paces") }
        if batch { names.append("batch") }
        return names
    }
}

/// One line a plugin wrote on its stdout, read.
enum PluginAnswer {
    case progress(id: Int, bytes: Int64)
    /// A paced put asks to send `bytes` more of its file.
    case want(id: Int, bytes: Int64)
    case entry(id: Int, RemoteListing.Entry)
    case ok(id: Int, JSONValue)
    case error(id: Int, PluginErrorBody)

    var id: Int {
        switch self {
        case .progress(let id, _), .want(let id, _), .entry(let id, _), .ok(let id, _), .error(let id, _): id
        }
    }

    var isFinal: Bool {
        switch self {
        case .ok, .error: true
        case .progress, .want, .entry: false
        }
    }

    /// Reads one line; throws a description of what is wrong with it.
    static func parse(_ line: ArraySlice<UInt8>) throws(PluginViolation) -> PluginAnswer {
        try parse(try PluginFraming.json(line), line: line)
    }

    /// Reads one answer, the line's whole value or one message of a batch; `line` is for error messages.
    static func parse(_ value: JSONValue, line: ArraySlice<UInt8>) throws(PluginViolation) -> PluginAnswer {
        guard case .object(let object) = value else { throw .malformed("an answer must be a JSON object: \(Self.excerpt(line))") }
        guard let id = object["id"]?.int64, id > 0, id <= Int64(Int32.max) else {
            throw .malformed("an answer without a positive whole \"id\": \(Self.excerpt(line))")
        }
        if let ok = object["ok"] { return .ok(id: Int(id), ok) }
        if let error = object["error"] { return .error(id: Int(id), try PluginErrorBody(error, line: line)) }
        if let progress = object["progress"] {
            guard let bytes = progress.int64, bytes >= 0 else { throw .malformed("\"progress\" must be a whole number of bytes >= 0: \(Self.excerpt(line))") }
            return .progress(id: Int(id), bytes: bytes)
        }
        if let want = object["want"] {
            guard let bytes = want.int64, bytes >= 1, bytes <= PluginProtocol.maxWant else {
                throw .malformed("\"want\" must be a whole number of bytes, 1 to \(PluginProtocol.maxWant): \(Self.excerpt(line))")
            }
            return .want(id: Int(id), bytes: bytes)
        }
        if let entry = object["entry"] {
            guard let name = entry["name"]?.string, !name.isEmpty else { throw .malformed("an \"entry\" needs a \"name\": \(Self.excerpt(line))") }
            let size = entry["size"]?.int64
            // The plugin's own checksum of the copy, when its listing has one cheaply (`syncgate check` compares it).
            let sha256 = entry["sha256"]?.string.flatMap { $0.utf8.count == 64 && $0.allSatisfy(\.isHexDigit) ? $0.lowercased() : nil }
            return .entry(id: Int(id), RemoteListing.Entry(name: name, size: size, sha256: sha256))
        }
        throw .malformed("an answer needs one of \"ok\", \"error\", \"progress\", \"entry\": \(Self.excerpt(line))")
    }

    /// The start of a line, printable, for an error message.
    static func excerpt(_ line: ArraySlice<UInt8>, limit: Int = 120) -> String {
        let text = String(decoding: line.prefix(limit), as: UTF8.self)
        let printable = String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
        return "'" + Redactor.shared.redact(printable) + (line.count > limit ? "...'" : "'")
    }
}

/// An `error` answer: class, scope, code, message, Retry-After, and for `configure` the settings at fault.
struct PluginErrorBody: Error, Sendable {
    var failureClass: FailureClass
    var scope: FailureScope
    var code: String?
    var message: String
    /// `configure`'s complaints about its settings: a dotted key under `settings` and what is wrong with it.
    var settings: [(key: String, message: String)] = []

    init(_ value: JSONValue, line: ArraySlice<UInt8>) throws(PluginViolation) {
        guard case .object = value else { throw .malformed("\"error\" must be an object: \(PluginAnswer.excerpt(line))") }
        let after: Duration?
        if let seconds = value["retry_after"]?.double {
            guard seconds >= 0, seconds <= 86_400 * 7 else { throw .malformed("\"retry_after\" must be seconds, 0 to 604800: \(PluginAnswer.excerpt(line))") }
            after = .milliseconds(Int64(seconds * 1000))
        } else {
            after = nil
        }
        switch value["class"]?.string {
        case "retryable": failureClass = .retryable(after: after)
        case "permanent": failureClass = .permanent
        case "deferred": failureClass = .deferred(after: after)
        default: throw .malformed("an error's \"class\" must be retryable, permanent or deferred: \(PluginAnswer.excerpt(line))")
        }
        switch value["scope"]?.string {
        case nil, "file": scope = .file
        case "destination": scope = .destination
        default: throw .malformed("an error's \"scope\" must be file or destination: \(PluginAnswer.excerpt(line))")
        }
        code = value["code"]?.string
        message = value["message"]?.string ?? "(no message)"
        if case .array(let items)? = value["settings"] {
            for item in items {
                if let key = item["key"]?.string { settings.append((key, item["message"]?.string ?? message)) }
            }
        }
    }

    var destinationError: DestinationError {
        DestinationError(failureClass, scope: scope, code: code, Redactor.shared.snippet(message, limit: 2000))
    }
}

/// What a plugin did wrong on its stdout.
enum PluginViolation: Error, CustomStringConvertible {
    case notJSON(String)
    case malformed(String)
    case tooLong
    case wrongID(Int)
    case answeredTwice(Int, String)

    var description: String {
        switch self {
        case .notJSON(let excerpt): "wrote a line that is not JSON: \(excerpt)"
        case .malformed(let text): "broke the protocol: \(text)"
        case .tooLong: "wrote a line over \(PluginProtocol.maxLineBytes / 1024 / 1024) MiB"
        case .wrongID(let id): "answered request \(id), which syncgate never sent"
        case .answeredTwice(let id, let what): "answered request \(id) (\(what)) after its final answer (an answer twice?)"
        }
    }
}
