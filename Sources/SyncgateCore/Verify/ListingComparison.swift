import Foundation

/// Compares ledger rows with their copies as a destination's listing names them, and keeps only what it found: the
/// findings, the rows whose copies are to be hashed (`--checksum`), and counts. It is fed one row at a time by
/// ``ListingMerge`` (a listing in byte order, merged page by page) or ``ListingIndex`` (any other listing, held).
///
/// A synced row whose copy is not listed is **missing** (unless the listing may leave names out); one whose copy is
/// listed with another size, another checksum than its receipt recorded (an S3 ETag, a local file's modification time),
/// or another SHA-256 (a plugin's own) is **different**. A listed name that no row of the destination knows, whatever its status, is
/// **extra**. Rows not synced (pending, uploading, failed) and rows of files gone from their source are never missing.
struct ListingComparison: Sendable {
    /// A copy that matched by the listing, to be read whole and hashed (`--checksum`).
    struct HashCandidate: Sendable {
        var file: FileKey
        var remoteName: String
        var sha256: String
    }

    private let wantsHashes: Bool
    /// Missing and different copies, in the order their rows were compared.
    private(set) var findings: [VerificationFinding] = []
    /// Names listed that no row knows, in the order they were found.
    private(set) var extraNames: [String] = []
    private(set) var hashCandidates: [HashCandidate] = []
    /// Synced rows compared.
    private(set) var checked = 0
    /// Synced rows whose copy was not listed by an incomplete listing: neither missing nor confirmed.
    private(set) var unconfirmed = 0
    /// Names the destination listed.
    var listed = 0

    init(hashing: Bool) {
        wantsHashes = hashing
    }

    /// Compares one ledger row with its copy `copy` (nil when the listing did not name `name`).
    mutating func compare(_ row: LedgerEntry, remoteName name: String, copy: RemoteListing.Entry?, listingIsComplete: Bool) {
        guard row.status == .synced, row.removed == nil else { return }
        checked += 1
        guard let copy else {
            if listingIsComplete {
                findings.append(VerificationFinding(kind: .missing, remoteName: name, file: row.file))
            } else {
                unconfirmed += 1
            }
            return
        }
        if let size = copy.size, size != row.size {
            findings.append(VerificationFinding(kind: .different, remoteName: name, file: row.file, detail: "size \(size), synced \(row.size)"))
        } else if let checksum = copy.checksum, let delivered = row.receipt?.etag, !delivered.isEmpty, checksum != delivered {
            findings.append(VerificationFinding(kind: .different, remoteName: name, file: row.file, detail: Self.describe(checksum, delivered: delivered)))
        } else if let listed = copy.sha256, let delivered = row.sha256, listed.lowercased() != delivered.lowercased() {
            findings.append(VerificationFinding(
                kind: .different, remoteName: name, file: row.file, detail: "SHA-256 \(listed.prefix(12))..., synced \(delivered.prefix(12))..."))
        } else if wantsHashes, let sha256 = row.sha256 ?? row.receipt?.sha256 {
            hashCandidates.append(HashCandidate(file: row.file, remoteName: name, sha256: sha256))
        }
    }

    /// A listed name that no row of the destination knows.
    mutating func noteExtra(_ name: String) {
        extraNames.append(name)
    }

    /// The listing that was merged turned out to leave names out (it said so at its end): the copies reported missing
    /// are only unconfirmed.
    mutating func listingWasIncomplete() {
        let missing = findings.count { $0.kind == .missing }
        findings.removeAll { $0.kind == .missing }
        unconfirmed += missing
    }

    /// What differs between the listed checksum and the delivered one, readably: a local copy's modification time
    /// (`mtime-<seconds>.<nanoseconds>`) as a UTC time to the millisecond, an ETag as it is.
    static func describe(_ listed: String, delivered: String) -> String {
        func time(_ value: String) -> String? {
            guard value.hasPrefix("mtime-"), let seconds = Double(value.dropFirst(6)) else { return nil }
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.string(from: Date(timeIntervalSince1970: seconds))
        }
        if let now = time(listed), let then = time(delivered) { return "modified \(now), delivered copy's time \(then)" }
        return "ETag \(listed), delivered \(delivered)"
    }

    /// The listed names no row knows, in byte order.
    func extras() -> [VerificationFinding] {
        extraNames.sorted { ExactString.compare($0, $1) < 0 }.map { VerificationFinding(kind: .extra, remoteName: $0, file: nil) }
    }
}
