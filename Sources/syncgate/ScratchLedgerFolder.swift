import Foundation

/// The temporary folder of the empty ledger a looking command reads when no sync has run yet
/// (``GlobalOptions/openLedgerToLook(_:)``); `url` is nil when the command reads the real state.
struct ScratchLedgerFolder {
    let url: URL?

    func remove() {
        if let url { try? FileManager.default.removeItem(at: url) }
    }
}
