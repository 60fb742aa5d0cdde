import Foundation
import Synchronization

/// Scrubs registered secrets from any text that leaves the process (logs, errors, events, the ledger).
///
/// A secret is scrubbed in every form it takes on the way out, not only as written: JSON-escaped once or twice
/// (`\"`, `\\`, `\/`, `\u00fc`), HTML-escaped, percent-encoded (whichever characters the encoder escapes, upper-
/// or lower-case hex, `+` for space) and base64 (standard and URL-safe, alone or at any alignment inside a longer
/// base64 text). An answer that echoes a request body therefore cannot carry a secret past it.
///
/// Cut text before it is shown with ``snippet(_:limit:)``, which redacts first: cutting first could leave a
/// secret's beginning that no longer matches. As a second line, a fragment of a secret's start (4 bytes or more)
/// that ends right at a cut mark (`...` or `…`) is scrubbed too.
public final class Redactor: Sendable {
    public static let shared = Redactor()
    /// What a secret is replaced with.
    public static let mark = "<redacted>"
    /// The secrets registered, and their compiled needles.
    private let state = Mutex<(secrets: [String], patterns: Patterns)>(([], Patterns()))

    public init() {}

    /// Registers a secret. Values shorter than 4 characters are too common to scrub safely and are ignored.
    public func register(_ secret: String) {
        let trimmed = secret.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.count >= 4 else { return }
        state.withLock { state in
            guard !state.secrets.contains(trimmed) else { return }
            state.secrets.append(trimmed)
            var needles: [[UInt8]] = []
            var decoded: [[UInt8]] = []
            var prefixes: [[UInt8]] = []
            for secret in state.secrets {
                let forms = Encodings(secret)
                needles += forms.all.map { Array($0.utf8) }
                decoded += forms.percentDecoded.map { Array($0.utf8) }
                prefixes += forms.textual.map { Array($0.utf8) }
            }
            state.patterns = Patterns(needles: needles, decodedNeedles: decoded, prefixNeedles: prefixes)
        }
    }

    /// `text` with every registered secret, in every encoding, replaced by `<redacted>`.
    public func redact(_ text: String) -> String {
        let patterns = state.withLock { $0.patterns }
        guard !patterns.isEmpty else { return text }
        let bytes = Array(text.utf8)
        guard let scrubbed = patterns.scrub(bytes) else { return text }
        return String(decoding: scrubbed, as: UTF8.self)
    }

    /// `text` redacted, then cut to at most `limit` characters (plus `...` when cut). A `<redacted>` mark is never
    /// cut in two.
    public func snippet(_ text: String, limit: Int = 300) -> String {
        let redacted = redact(text.trimmingCharacters(in: .whitespacesAndNewlines))
        guard redacted.count > limit else { return redacted }
        var end = redacted.index(redacted.startIndex, offsetBy: limit)
        // Keep a mark that straddles the cut whole.
        let window = redacted.index(end, offsetBy: -(Redactor.mark.count - 1), limitedBy: redacted.startIndex) ?? redacted.startIndex
        if let mark = redacted.range(of: Redactor.mark, range: window..<redacted.endIndex), mark.lowerBound < end, mark.upperBound > end {
            end = mark.upperBound
        }
        return String(redacted[..<end]) + "..."
    }

    /// An error code as it is kept and shown (the ledger's `error_code`, `status --json`, events): a code comes
    /// from elsewhere (a plugin's answer, S3's or STS's `<Code>`) and may echo a secret like any message, so it is
    /// redacted, then cut to ``codeLimit`` characters.
    public func redactCode(_ code: String) -> String {
        snippet(code, limit: Redactor.codeLimit)
    }

    /// The longest error code kept (a real one is a short word: `AccessDenied`, `name-clash`).
    public static let codeLimit = 128
}
