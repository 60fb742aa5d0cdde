import Foundation

/// What the ledger keeps of a destination's last verification (`syncgate check`, or a gateway's `check.interval`):
/// when, how many synced rows were compared, and what was found. `status`, the status page and `/metrics` show it.
public struct VerificationRecord: Sendable, Hashable {
    public var destination: String
    /// When the verification finished.
    public var verifiedAt: Date
    /// Synced ledger rows compared with the destination's listing.
    public var checked: Int
    public var missing: Int
    public var different: Int
    public var extra: Int
    /// Copies that could not be compared (`--checksum` could not read them).
    public var errors: Int
    /// Rows marked pending again by `--repair` (or `check.repair: true`).
    public var repaired: Int

    public init(destination: String, verifiedAt: Date, checked: Int, missing: Int = 0, different: Int = 0, extra: Int = 0,
                errors: Int = 0, repaired: Int = 0) {
        self.destination = destination
        self.verifiedAt = verifiedAt
        self.checked = checked
        self.missing = missing
        self.different = different
        self.extra = extra
        self.errors = errors
        self.repaired = repaired
    }

    /// Findings of every kind.
    public var findings: Int { missing + different + extra + errors }

    /// The `--json` (and status) object.
    public var json: [String: Any] {
        [
            "verified_at": ReportJSON.time(verifiedAt), "checked": checked, "missing": missing, "different": different,
            "extra": extra, "errors": errors, "repaired": repaired,
        ]
    }
}
