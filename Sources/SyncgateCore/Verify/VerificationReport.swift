import Foundation

/// What one verification of a destination found (``Verifier``): its record, the findings, and what the listing allowed.
public struct VerificationReport: Sendable {
    public var record: VerificationRecord
    /// Missing and different copies in the ledger's order, then extras in byte order, then copies that could not be read.
    public var findings: [VerificationFinding]
    /// Names the destination listed.
    public var listed: Int
    /// False when the destination's listing may leave names out (a head unit's ListFiles names at most 1,000): synced
    /// rows whose copies it did not name are then counted in ``unconfirmed``, not reported missing.
    public var listingIsComplete: Bool
    public var unconfirmed: Int
    /// True when the listing was merged with the ledger page by page (in byte order, memory flat); false when it was
    /// held whole (a listing in no order, or one that broke it).
    public var listingMerged = false

    public var destination: String { record.destination }
    public var isClean: Bool { findings.isEmpty }

    /// The summary line: `local: 12 checked, 2 missing, 1 different, 1 extra (3 repaired: pending for the next sync)`.
    public var summary: String {
        var text = "\(destination): \(record.checked) checked, \(record.missing) missing, \(record.different) different, \(record.extra) extra"
        if record.errors > 0 { text += ", \(record.errors) unreadable" }
        if unconfirmed > 0 { text += ", \(unconfirmed) not in the destination's partial listing" }
        if record.repaired > 0 { text += " (\(record.repaired) marked pending: the next sync sends them again)" }
        return text
    }

    /// The `--json` object of the destination.
    public var json: [String: Any] {
        var object = record.json
        object["destination"] = destination
        object["listed"] = listed
        object["listing_complete"] = listingIsComplete
        object["unconfirmed"] = unconfirmed
        object["listing_merged"] = listingMerged
        object["findings"] = findings.map(\.json)
        return object
    }
}
