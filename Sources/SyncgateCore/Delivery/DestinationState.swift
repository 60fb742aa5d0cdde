/// Whether a destination can be used, as the ledger remembers it between runs.
public enum DestinationState: String, Sendable, Hashable, Codable, CaseIterable {
    /// It answered the last time it was tried (or has not been tried yet).
    case available
    /// It could not be reached or used (connection refused, no session, throttled too long, no space): its files
    /// wait, pending, and the next run probes it once before sending them.
    case unavailable
    /// It refused syncgate itself (credentials or configuration rejected): its files wait until the destination's
    /// settings or credentials change, or `syncgate retry`.
    case blocked
}
