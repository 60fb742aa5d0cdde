import Foundation

/// The outcome of one `sync` pass, and its exit code.
public struct SyncSummary: Sendable {
    public var files: Int = 0
    public var planned: Int = 0
    public var uploaded: Int = 0
    /// Found already at the destination (no upload needed).
    public var alreadyPresent: Int = 0
    public var upToDate: Int = 0
    /// Files not sent because they were modified less than their source's `min_age` ago (per destination).
    public var tooNew: Int = 0
    /// When each of those is old enough (a gateway looks at them again then).
    public var tooNewReadyAt: [FileKey: Date] = [:]
    public var failed: Int = 0
    /// Failures (this run's or earlier runs' still standing) that will not be retried automatically.
    public var failedPermanently: Int = 0
    /// Failures scheduled for a later run.
    public var failedRetryable: Int = 0
    /// Files left pending because their destination is unavailable or blocked (no attempt counted).
    public var waiting: Int = 0
    /// Sources that could not be walked (a missing folder that is not `optional`).
    public var sourcesFailed: Int = 0
    public var interrupted: Bool = false
    public var bytesUploaded: Int64 = 0
    public var warnings: Int = 0
    public var seconds: Double = 0
    /// Files found gone from their source in this run (their rows marked removed).
    public var removedFromSources: Int = 0
    /// Files removed from their source between the walk and their upload (``SourceGone``): not failed, left
    /// pending for the next walk to mark removed. Each once, whatever the number of its destinations.
    var goneFiles: Set<FileKey> = []
    public var goneBeforeSent: Int { goneFiles.count }
    /// Copies deleted at destinations because their file was removed from its source (`delete_remote`).
    public var remoteDeleted: Int = 0
    /// Such deletions that failed (tried again next run).
    public var remoteDeleteFailed: Int = 0
    /// Destinations where more copies were to be deleted than `max_delete` allows: none were deleted there.
    public var deleteLimits: [DeleteLimit] = []
    /// Sources a mirror held back: nothing of them was deleted at any destination (``SourceJudge``).
    public var heldBack: [SourceHold] = []
    /// Source files deleted because every destination held them (`after_sync: delete`).
    public var moved: Int = 0
    /// A walk split between a fleet's instances saw the fleet change on its way: another full pass is due (a
    /// gateway's; a sync walks again by itself).
    public var fleetChangedDuringWalk = false
    /// Such files that could not be deleted (with why, per file).
    public var moveFailures: [String] = []

    /// A destination whose deletions `max_delete` stopped.
    public struct DeleteLimit: Sendable, Hashable {
        public var destination: String
        public var wanted: Int
        public var limit: Int
        /// Copies deleted there in the last hour already (a gateway counts `max_delete` per hour; `sync` per run: 0).
        public var deletedRecently: Int = 0
    }

    /// A source whose walk looked like a source gone away rather than files deleted: its files were not marked
    /// removed and none of its copies was deleted anywhere.
    public struct SourceHold: Sendable, Hashable {
        public var source: String
        /// Why, said to a person (`its folder is another one than at the last complete walk`, ...).
        public var reason: String
        /// Files of the source the walk found gone (whose copies would have been deleted).
        public var gone: Int
    }

    /// The destinations that are unavailable or blocked at the end of the run, with the files waiting for each.
    public var away: [AwayDestination] = []

    /// A destination that was not usable in this run.
    public struct AwayDestination: Sendable, Hashable {
        public var name: String
        public var state: DestinationState
        public var since: Date
        public var error: String
        public var code: String?
        /// Files waiting for it (pending in the ledger).
        public var waiting: Int
    }

    public init() {}

    mutating func noteTooNew(_ files: [FileKey: Date]) {
        tooNew += files.count
        tooNewReadyAt.merge(files) { max($0, $1) }
    }

    /// 0 everything routed is synced; 1 some file failed, a source is missing, a destination is blocked, `max_delete`
    /// stopped deletions, a source was held back or a delivered file could not be deleted from its source; 75 only retryable failures remain,
    /// scheduled, or files wait for an unavailable destination; 130 interrupted.
    public var exitCode: Int32 {
        if interrupted { return ExitStatus.interrupted }
        if failedPermanently > 0 || sourcesFailed > 0 || away.contains(where: { $0.state == .blocked }) || !deleteLimits.isEmpty
            || !heldBack.isEmpty || !moveFailures.isEmpty {
            return ExitStatus.failed
        }
        if failedRetryable > 0 || waiting > 0 || !away.isEmpty || remoteDeleteFailed > 0 { return ExitStatus.retryScheduled }
        return ExitStatus.success
    }
}

/// The exit codes of `syncgate`.
public enum ExitStatus {
    public static let success: Int32 = 0
    public static let failed: Int32 = 1
    public static let usage: Int32 = 64
    public static let retryScheduled: Int32 = 75
    public static let config: Int32 = 78
    public static let interrupted: Int32 = 130
}
