/// Whom an error is about: the one file, or the destination as a whole. Decided by the plugin for its own errors,
/// acted on by the delivery layer the same way for every destination.
public enum FailureScope: String, Sendable, Hashable, Codable {
    /// This file cannot go (too large, a bad record, a name clash, INVALID_DATA), or this attempt of it failed: the
    /// file is retried or fails, the other files go on.
    case file
    /// The destination cannot be reached or used at all (connection refused or timed out while connecting, DNS,
    /// TLS, no session, throttling, credentials rejected, clock skew, no space): nothing more is tried there in
    /// this run and its files stay pending, with no attempt counted (see ``DestinationState``).
    case destination
}
