import Foundation

/// What a run will do with one file at one destination, and why.
public struct PlannedDelivery: Sendable {
    public enum Action: Sendable {
        /// Send it; `reason` is `new`, `changed`, `retry due`, `resume`, `missing at destination`, `retry requested`.
        case upload(reason: String)
        /// Nothing to do now; `reason` says why (`up to date`, `retry scheduled at ...`, ...).
        case skip(reason: String, stillFailed: FailureClass?)
        /// Cannot be sent (unreadable, name clash, no space): recorded failed without an attempt.
        case fail(DeliveryFailure)
    }

    public var file: ScannedFile
    public var destination: String
    public var action: Action
    public var sha256: String?
    public var isArtwork: Bool
    public var entry: LedgerEntry?
    public var remoteName: String?

    public var isUpload: Bool {
        if case .upload = action { return true }
        return false
    }

    public var reason: String {
        switch action {
        case .upload(let reason): reason
        case .skip(let reason, _): reason
        case .fail(let failure): failure.message
        }
    }
}
