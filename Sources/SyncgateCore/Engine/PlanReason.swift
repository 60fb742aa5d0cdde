import Foundation

/// Why a file is sent to a destination in this run.
public enum UploadReason: String, Sendable, Hashable, CustomStringConvertible {
    /// Never delivered there (or recorded without an attempt yet).
    case new
    /// Its content differs from what was delivered.
    case changed
    /// It failed in an earlier run and its retry is due.
    case retryDue = "retry due"
    /// Attempted before without an outcome, or asked for with `syncgate retry`.
    case retryRequested = "retry requested"
    /// Recorded synced, but the destination's listing no longer has it (a head unit forgot it).
    case missingAtDestination = "missing at destination"

    public var description: String { rawValue }
}

/// Why a file is not sent to a destination in this run.
public enum SkipReason: Sendable, Hashable, CustomStringConvertible {
    /// Delivered, and unchanged since (same size and time).
    case upToDate
    /// Delivered; touched since but with the same bytes (its size and time are refreshed in the ledger).
    case touched
    /// Failed with a permanent error: only a change or `syncgate retry` sends it again.
    case failedPermanently(error: String)
    /// Failed; the next automatic retry is not due yet.
    case retryScheduled(at: Date)
    /// Failed for longer than `give_up_after`: only `syncgate retry` sends it again.
    case gaveUp(failingSince: Date?)
    /// Modified less than its source's `min_age` ago: it waits (not recorded) until `readyAt`.
    case tooNew(minAge: Duration, readyAt: Date)

    /// How the file still stands when it is skipped: nil when it is delivered, else the class of its failure.
    public var stillFailed: FailureClass? {
        switch self {
        case .upToDate, .touched, .tooNew: nil
        case .retryScheduled: .retryable()
        case .failedPermanently, .gaveUp: .permanent
        }
    }

    public var description: String {
        switch self {
        case .upToDate: "up to date"
        case .touched: "up to date (touched)"
        case .failedPermanently(let error): "failed permanently: \(error) (fix it, then run syncgate retry)"
        case .retryScheduled(let at): "retry scheduled at \(ReportJSON.time(at))"
        case .gaveUp(let since): "gave up after failing since \(since.map { "\(ReportJSON.time($0))" } ?? "?") (run syncgate retry)"
        case .tooNew(let minAge, _): "too new (min_age \(minAge.syncgateText))"
        }
    }
}
