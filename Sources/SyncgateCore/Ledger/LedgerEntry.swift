import Foundation

/// One row of the ledger: one source file at one destination.
public struct LedgerEntry: Sendable, Hashable {
    public var file: FileKey
    public var destination: String
    public var status: FileStatus
    /// Attempts over all runs.
    public var attempts: Int
    public var lastAttemptAt: Date?
    /// The last error's text (secrets redacted).
    public var lastError: String?
    /// The class of a failed row's last error.
    public var errorClass: FailureClass?
    public var errorCode: String?
    /// When a later run may try a failed file again (nil: not automatically).
    public var nextRetryAt: Date?
    /// Runs in a row that ended with this file failed.
    public var failedRuns: Int
    public var firstFailedAt: Date?
    public var size: Int64
    public var modificationTime: Date
    /// SHA-256 of the content (planned, or delivered once synced).
    public var sha256: String?
    public var receipt: Receipt?
    /// Bytes of the current attempt delivered (updated about once a second while uploading).
    public var bytesDone: Int64
    public var queuedAt: Date?
    public var syncedAt: Date?
    public var updatedAt: Date
    /// Set once the file is gone from its source: how (nil while it is there).
    public var removed: Removal? = nil
    /// Since when the row is marked ``removed`` (it is dropped `recent.completed` after that).
    public var removedAt: Date? = nil
    /// The instance that holds the row for its upload (``Ledger/instanceID``), nil when none does.
    public var claimedBy: String? = nil
    /// Until when its claim holds unless renewed (the database server's clock).
    public var leaseUntil: Date? = nil

    /// Progress of an upload in flight, 0...1.
    public var progress: Double {
        status == .synced ? 1 : (size > 0 ? min(1, Double(bytesDone) / Double(size)) : 0)
    }
}
