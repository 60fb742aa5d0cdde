import Foundation

/// Scrubs registered secrets from any text that leaves the process (logs, errors, events, the ledger).
public final class Redactor: @unchecked Sendable {
    public static let shared = Redactor()
    private let lock = NSLock()
    private var secrets: [String] = []

    public init() {}

    /// Registers a secret. Values shorter than 4 characters are too common to scrub safely and are ignored.
    public func register(_ secret: String) {
        let trimmed = secret.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.count >= 4 else { return }
        lock.lock()
        defer { lock.unlock() }
        if !secrets.contains(trimmed) {
            secrets.append(trimmed)
            secrets.sort { $0.count > $1.count }
        }
    }

    public func redact(_ text: String) -> String {
        lock.lock()
        let list = secrets
        lock.unlock()
        guard !list.isEmpty else { return text }
        var result = text
        for secret in list where result.contains(secret) {
            result = result.replacingOccurrences(of: secret, with: "<redacted>")
        }
        return result
    }
}
