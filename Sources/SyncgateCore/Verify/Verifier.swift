import Foundation

/// Verifies one destination against the ledger (`syncgate check`): lists it once, the way its plugin lists best
/// (``Destination/verificationListing(beforeRequest:page:)``: never a request per file), compares every synced row
/// with the listing, optionally hashes the copies that matched (`--checksum`, where the destination can read them
/// back), marks missing and different copies pending again when asked to repair, and records the verification in the
/// ledger. Extras are only reported: deleting them is `delete_remote`'s job.
///
/// A listing in byte order (S3, a local folder) is merged with the ledger's rows page by page (``ListingMerge``):
/// memory stays flat whatever the destination holds. Any other listing is held and looked up (``ListingIndex``), as
/// is an ordered one that turns out out of order (S3 directory buckets). Every request (a listing page, a copy read
/// for `--checksum`) waits for the destination's `rate`.
public struct Verifier: Sendable {
    public var name: String
    public var destination: any Destination
    public var ledger: Ledger
    public var clock: any SyncClock
    /// Reads copies whole and compares their SHA-256 with the ledger's (a local folder).
    public var checksum: Bool
    /// Marks the rows of missing and different copies pending, so that the next sync sends them again.
    public var repair: Bool
    /// The destination's limits (`rate`), shared with its deliveries in the process; nil: none.
    public var limits: DeliveryLimits?
    /// Ledger rows read per page and source when a listing is merged (tests lower it to cross pages).
    var rowPageSize = VerificationRowCursor.pageSize

    public init(name: String, destination: any Destination, ledger: Ledger, clock: any SyncClock = SystemClock(),
                checksum: Bool = false, repair: Bool = false, limits: DeliveryLimits? = nil) {
        self.name = name
        self.destination = destination
        self.ledger = ledger
        self.clock = clock
        self.checksum = checksum
        self.repair = repair
        self.limits = limits
    }

    /// Runs the verification. Throws when the destination cannot be listed or the ledger read (nothing is recorded
    /// then).
    public func run() async throws -> VerificationReport {
        var compared: ListingComparison
        var listingIsComplete: Bool
        var listingMerged = false
        if destination.verificationListingIsOrdered && destination.remoteNamesAreDistinct {
            do {
                (compared, listingIsComplete) = try await merged()
                listingMerged = true
            } catch is ListingMerge.OutOfOrder {
                (compared, listingIsComplete) = try await indexed()
            }
        } else {
            (compared, listingIsComplete) = try await indexed()
        }
        var findings = compared.findings
        for candidate in compared.hashCandidates {
            do {
                try await beforeRequest()
                guard let sha256 = try await destination.copySHA256(remoteName: candidate.remoteName) else { continue }
                if sha256 != candidate.sha256 {
                    findings.append(VerificationFinding(kind: .different, remoteName: candidate.remoteName, file: candidate.file,
                                                        detail: "SHA-256 \(sha256.prefix(12))..., synced \(candidate.sha256.prefix(12))..."))
                }
            } catch is CancellationError {
                throw CancellationError()
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
        var report = VerificationReport(record: record, findings: findings, listed: compared.listed,
                                        listingIsComplete: listingIsComplete, unconfirmed: compared.unconfirmed)
        report.listingMerged = listingMerged
        return report
    }

    /// The name a row's copy is stored under: its receipt's, else the one the destination gives its path.
    private var remoteName: @Sendable (LedgerEntry) -> String {
        let plugin = destination
        return { row in row.receipt?.remoteName ?? (try? plugin.remoteName(forRelativePath: row.file.path)) ?? row.file.path }
    }

    private func beforeRequest() async throws {
        try await limits?.beforeRequest(clock: clock)
    }

    /// The listing merged with the rows page by page.
    private func merged() async throws -> (ListingComparison, Bool) {
        var merge = ListingMerge(rows: try await VerificationRowCursor(ledger: ledger, destination: name, pageSize: rowPageSize, remoteName: remoteName),
                                 hashing: checksum)
        let complete = try await destination.verificationListing(beforeRequest: beforeRequest) { page in
            try await merge.merge(page)
        }
        return (try await merge.finish(listingIsComplete: complete), complete)
    }

    /// The whole listing held, the rows looked up in it.
    private func indexed() async throws -> (ListingComparison, Bool) {
        try await beforeRequest()
        let listing = try await destination.verificationListing()
        let index = try await ledger.compare(ListingIndex(listing: listing, hashing: checksum, remoteName: remoteName), destination: name)
        return (index.finished(), listing.isComplete)
    }
}
