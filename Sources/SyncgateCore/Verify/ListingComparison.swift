import Foundation

/// Compares a destination's listing with its ledger rows, one row at a time (in the ledger's key order), and keeps
/// only what it found: the findings, the rows whose copies are to be hashed (`--checksum`), and counts.
///
/// A synced row whose copy is not listed is **missing** (unless the listing may leave names out); one whose copy is
/// listed with another size, another checksum than its receipt recorded (an S3 ETag, a local file's modification time),
/// or another SHA-256 (a plugin's own) is **different**. A listed name that no row of the destination knows, whatever its status, is
/// **extra**. Rows not synced (pending, uploading, failed) and rows of files gone from their source are never missing.
struct ListingComparison: Sendable {
    /// A listed copy, and whether a ledger row names it.
    private struct Listed {
        var entry: RemoteListing.Entry
        var known = false
    }

    /// A copy that matched by the listing, to be read whole and hashed (`--checksum`).
    struct HashCandidate: Sendable {
        var file: FileKey
        var remoteName: String
        var sha256: String
    }

    private var listed: [ExactString: Listed]
    private let listingIsComplete: Bool
    private let wantsHashes: Bool
    private let remoteName: @Sendable (String) -> String
    private(set) var findings: [VerificationFinding] = []
    private(set) var hashCandidates: [HashCandidate] = []
    /// Synced rows compared.
    private(set) var checked = 0
    /// Synced rows whose copy was not listed by an incomplete listing: neither missing nor confirmed.
    private(set) var unconfirmed = 0

    /// `remoteName` maps a ledger path to the name the destination stores it under (used for rows without a receipt).
    init(listing: RemoteListing, hashing: Bool, remoteName: @escaping @Sendable (String) -> String) {
        var listed: [ExactString: Listed] = [:]
        listed.reserveCapacity(listing.entries.count)
        for entry in listing.entries { listed[ExactString(entry.name)] = Listed(entry: entry) }
        self.listed = listed
        listingIsComplete = listing.isComplete
        wantsHashes = hashing
        self.remoteName = remoteName
    }

    /// Compares one ledger row of the destination.
    mutating func compare(_ row: LedgerEntry) {
        let name = row.receipt?.remoteName ?? remoteName(row.file.path)
        let key = ExactString(name)
        let copy = listed[key]?.entry
        if copy != nil { listed[key]?.known = true }
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
        listed.filter { !$0.value.known }.keys.sorted { ExactString.compare($0.value, $1.value) < 0 }.map {
            VerificationFinding(kind: .extra, remoteName: $0.value, file: nil)
        }
    }
}
