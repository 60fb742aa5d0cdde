import CBuildInfo
import SyncgateCore

/// What `syncgate --version` prints: `syncgate 0.1.0 (commit abc1234, built 2026-11-24)`. The commit and date come
/// from the build (`scripts/install` names them, see Package.swift); a plain `swift build` gives
/// `syncgate 0.1.0 (commit unknown)`.
enum BuildInfo {
    static let version = "0.1.0"

    static var commit: String? { nonEmpty(String(cString: syncgate_build_commit())) }
    static var date: String? { nonEmpty(String(cString: syncgate_build_date())) }

    static var versionLine: String {
        guard let commit else { return "syncgate \(version) (commit unknown)" }
        guard let date else { return "syncgate \(version) (commit \(commit))" }
        return "syncgate \(version) (commit \(commit), built \(date))"
    }

    /// The same, for monitoring (`syncgate_build_info`).
    static var description: BuildDescription { BuildDescription(version: version, commit: commit, buildDate: date) }

    private static func nonEmpty(_ text: String) -> String? { text.isEmpty ? nil : text }
}
