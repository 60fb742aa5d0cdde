/// Where a file stands at a destination.
public enum FileStatus: String, Sendable, Hashable, Codable, CaseIterable {
    /// Recorded, not delivered yet (or a run stopped before it was).
    case pending
    /// An attempt is in flight.
    case uploading
    /// Delivered; the receipt says how.
    case synced
    /// Retries ran out in a run, or the error is permanent.
    case failed
}
