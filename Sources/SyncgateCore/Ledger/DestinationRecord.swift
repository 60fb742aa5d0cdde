import Foundation

/// One destination's row in the ledger: its state, since when, why, and when it is probed next.
public struct DestinationRecord: Sendable, Hashable {
    public var name: String
    public var state: DestinationState
    /// When it entered this state.
    public var since: Date
    /// The error that made it unavailable or blocked (secrets redacted).
    public var lastError: String?
    public var errorCode: String?
    /// Probes that found it still away since it became unavailable.
    public var failedProbes: Int
    /// When a gateway probes it next (a one-shot sync probes at its start whatever this says).
    public var nextProbeAt: Date?
    /// For a blocked destination: the digest of its settings when it was blocked (a change unblocks it).
    public var fingerprint: String?
    /// The last time it answered.
    public var lastSeenAt: Date?
    /// Until when it asked to be left alone (a destination-scoped answer with Retry-After): no run tries it, nor
    /// probes it, before then.
    public var retryAfterUntil: Date?

    public init(name: String, state: DestinationState, since: Date, lastError: String? = nil, errorCode: String? = nil,
                failedProbes: Int = 0, nextProbeAt: Date? = nil, fingerprint: String? = nil, lastSeenAt: Date? = nil, retryAfterUntil: Date? = nil) {
        self.name = name
        self.state = state
        self.since = since
        self.lastError = lastError
        self.errorCode = errorCode
        self.failedProbes = failedProbes
        self.nextProbeAt = nextProbeAt
        self.fingerprint = fingerprint
        self.lastSeenAt = lastSeenAt
        self.retryAfterUntil = retryAfterUntil
    }
}
