import Foundation

/// Everything that happens to a file at a destination, in order, as the delivery layer and engine see it.
public struct DeliveryEvent: Sendable {
    public enum Kind: Sendable {
        /// Planned for delivery (recorded `pending`).
        case queued(reason: UploadReason)
        /// An attempt starts (attempt numbers count this run's attempts from 1).
        case started(attempt: Int)
        /// Bytes of this file delivered so far in the current attempt.
        case progress(bytes: Int64)
        /// The attempt failed and another follows after `delay`.
        case retrying(attempt: Int, error: DeliveryFailure, delay: Duration)
        /// Delivered (or found already there: `uploaded == false`).
        case synced(receipt: Receipt, attempts: Int, uploaded: Bool)
        /// Not delivered in this run.
        case failed(DeliveryFailure)
        /// Not delivered in this run because its destination is unavailable or blocked (the failure says why): the
        /// file stays pending. `attemptCut` when the file's last attempt in this run ended with the destination (cut
        /// short, or failed as part of the outage): that attempt is not counted.
        case waiting(DeliveryFailure, attemptCut: Bool)
        /// Removed from its source before it could be sent, its source's folder still there (``SourceGone``): neither
        /// delivered nor failed. Its row is pending, the attempt not counted; the next walk marks it removed.
        case gone
        /// Nothing to do (up to date, scheduled later, given up...).
        case skipped(reason: SkipReason)
    }

    public var file: FileKey
    public var destination: String
    public var size: Int64
    public var kind: Kind
    public var time: Date
    /// The file as it was planned, on the delivery layer's events (its modification time is what a synced row
    /// records); nil on events of files that were not sent.
    public var item: UploadItem?

    public init(file: FileKey, destination: String, size: Int64, kind: Kind, time: Date, item: UploadItem? = nil) {
        self.file = file
        self.destination = destination
        self.size = size
        self.kind = kind
        self.time = time
        self.item = item
    }

    public var name: String {
        switch kind {
        case .queued: "queued"
        case .started: "started"
        case .progress: "progress"
        case .retrying: "retrying"
        case .synced: "synced"
        case .failed: "failed"
        case .waiting: "waiting"
        case .gone: "gone"
        case .skipped: "skipped"
        }
    }
}
