import Foundation

/// What a run will do with one file at one destination, and why.
public struct PlannedDelivery: Sendable {
    public enum Action: Sendable {
        /// Send it, for this reason.
        case upload(UploadReason)
        /// Nothing to do now, for this reason.
        case skip(SkipReason)
        /// Cannot be sent (unreadable, name clash, no space): recorded failed without an attempt.
        case fail(DeliveryFailure)
    }

    public var file: ScannedFile
    public var destination: String
    public var action: Action
    public var sha256: String?
    public var isArtwork: Bool
    /// The file's ledger row before this run (nil for a new file, and dropped from plans with nothing to do).
    public var entry: LedgerEntry? {
        get { entryRef?.value }
        set { entryRef = newValue.map(LedgerEntryRef.init) }
    }
    var entryRef: LedgerEntryRef?
    public var remoteName: String?
    /// The file's route priority here, looked up only where the destination's order uses it (else 0).
    public var priority = 0

    public init(file: ScannedFile, destination: String, action: Action, sha256: String?, isArtwork: Bool, entry: LedgerEntry?, remoteName: String?) {
        self.init(file: file, destination: destination, action: action, sha256: sha256, isArtwork: isArtwork, entryRef: entry.map(LedgerEntryRef.init), remoteName: remoteName)
    }

    init(file: ScannedFile, destination: String, action: Action, sha256: String?, isArtwork: Bool, entryRef: LedgerEntryRef?, remoteName: String?) {
        self.file = file
        self.destination = destination
        self.action = action
        self.sha256 = sha256
        self.isArtwork = isArtwork
        self.entryRef = entryRef
        self.remoteName = remoteName
    }

    public var isUpload: Bool {
        if case .upload = action { return true }
        return false
    }

    public var reason: String {
        switch action {
        case .upload(let reason): reason.description
        case .skip(let reason): reason.description
        case .fail(let failure): failure.message
        }
    }
}
