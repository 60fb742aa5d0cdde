import Foundation

/// Verifies one destination against the ledger (`syncgate check`): lists it once, the way its plugin lists best
/// (``Destination/verificationListing()``: never a request per file), compares every synced row with the listing
/// (``ListingComparison``), optionally hashes the copies that matched (`--checksum`, where the destination can read
/// them back), marks missing and different copies pending again when asked to repair, and records the verification
/// in the ledger. Extras are only reported: deleting them is `delete_remote`'s job.
public struct Verifier: Sendable {
    public var name: String
    public var destination: any Destination
    public var ledger: Ledger
    public var clock: any SyncClock
    /// Reads copies whole and compares their SHA-256 with the ledger's (a local folder).
    public var checksum: Bool
    /// Marks the rows of missing and different copies pending, so that the next sync sends them again.
    public var repair: Bool

    public init(name: String, destination: any Destination, ledger: Ledger, clock: any SyncClock = SystemClock(),
                checksum: Bool = false, repair: Bool = false) {
        self.name = name
        self.destination = destination
        self.ledger = ledger
        self.clock = clock
        self.checksum = checksum
        self.repair = repair
    }

    /// Runs the verification. Throws when the destination cannot be listed or the ledger read (nothing is recorded
    /// then).
    public func run() async throws -> VerificationReport {
        let listing = try await destination.verificationListing()
        let plugin = destination
        let comparison = ListingComparison(listing: listing, hashing: checksum) { path in
            (try? plugin.remoteName(forRelativePath: path)) ?? path
        }
        let compared = try await ledger.compare(comparison, destination: name)
        var findings = compared.findings
        for candidate in compared.hashCandidates {
            do {
                guard let sha256 = try await destination.copySHA256(remoteName: candidate.remoteName) else { continue }
                if sha256 != candidate.sha256 {
                    findings.append(VerificationFinding(kind: .different, remoteName: candidate.remoteName, file: candidate.file,
                                                        detail: "SHA-256 \(sha256.prefix(12))..., synced \(candidate.sha256.prefix(12))..."))
                }
            } catch {
                findings.append(VerificationFinding(kind: .error, remoteName: candidate.remoteName, file: candidate.file,
                                                    detail: DeliveryLayer.describe(error)))
            }
        }
        findings += compared.extras()
        var repaired = 0
        if repair {
            repaired = try await ledger.markForResend(destination: name, findings: findings, at: clock.now())
        }
        func count(_ kind: VerificationFinding.Kind) -> Int { findings.count { $0.kind == kind } }
        let record = VerificationRecord(
            destination: name, verifiedAt: clock.now(), checked: compared.checked, missing: count(.missing),
            different: count(.different), extra: count(.extra), errors: count(.error), repaired: repaired)
        try await ledger.recordVerification(record)
        return VerificationReport(record: record, findings: findings, listed: listing.entries.count,
                                  listingIsComplete: listing.isComplete, unconfirmed: compared.unconfirmed)
    }
}
