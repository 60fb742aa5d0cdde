/// One difference `syncgate check` found between the ledger and what a destination holds.
public struct VerificationFinding: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The ledger says synced; the destination does not hold the copy.
        case missing
        /// The destination holds a copy under the name, but not the one delivered (size, checksum, or written since).
        case different
        /// The destination holds a name inside its prefix that no ledger row of it knows.
        case extra
        /// The copy could not be compared (`--checksum` could not read it).
        case error

        /// The mark of `rclone check`'s combined report: `-` missing at the destination, `+` only at the
        /// destination, `*` different, `!` could not be compared.
        public var mark: String {
            switch self {
            case .missing: "-"
            case .different: "*"
            case .extra: "+"
            case .error: "!"
            }
        }
    }

    /// The error code of a ``Destination/verificationListing()`` that says the destination cannot be verified at all
    /// (`syncgate check` then says so and goes on; it is not a failure to list).
    public static let notVerifiable = "not-verifiable"

    public var kind: Kind
    /// The name the destination holds (or should hold) the copy under.
    public var remoteName: String
    /// The ledger's file (nil for an extra).
    public var file: FileKey?
    /// What differs (empty when the kind says it all).
    public var detail: String

    public init(kind: Kind, remoteName: String, file: FileKey?, detail: String = "") {
        self.kind = kind
        self.remoteName = remoteName
        self.file = file
        self.detail = detail
    }

    /// The report's line: the mark, the name, and what differs.
    public var line: String {
        "\(kind.mark) \(TerminalText.escape(remoteName))" + (detail.isEmpty ? "" : "  (\(detail))")
    }

    /// The `--json` object of the finding.
    public var json: [String: Any] {
        var object: [String: Any] = ["kind": kind.rawValue, "remote_name": remoteName]
        if let file {
            object["source"] = file.source
            object["path"] = file.path
        }
        if !detail.isEmpty { object["detail"] = detail }
        return object
    }
}
