/// How the delivery layer treats an error: decided by the plugin, acted on by the core.
public enum FailureClass: Sendable, Hashable {
    /// Worth another attempt (timeouts, connection loss, 5xx, 429, "busy"). `after` is a server's
    /// Retry-After, honoured as the least delay before the next attempt.
    case retryable(after: Duration? = nil)
    /// Will fail again the same way (auth, not found, invalid data): not retried.
    case permanent
    /// Not a failure: the destination asks to wait (a head unit at HMI level NONE; with scope `destination`,
    /// throttling). The attempt is not counted against the retry budget.
    case deferred(after: Duration? = nil)

    public var isRetryable: Bool {
        if case .permanent = self { return false }
        return true
    }

    public var isDeferred: Bool {
        if case .deferred = self { return true }
        return false
    }

    /// The server's Retry-After carried by a retryable or deferred class.
    public var retryAfter: Duration? {
        switch self {
        case .retryable(let after), .deferred(let after): after
        case .permanent: nil
        }
    }

    /// The class named as the ledger and `--json` name it (`retryable`, `permanent`, `deferred`).
    public init?(name: String) {
        switch name {
        case "retryable": self = .retryable()
        case "permanent": self = .permanent
        case "deferred": self = .deferred()
        default: return nil
        }
    }

    public var name: String {
        switch self {
        case .retryable: "retryable"
        case .permanent: "permanent"
        case .deferred: "deferred"
        }
    }
}
