/// Which syncgate this is, for monitoring: the `syncgate_build_info{version,commit,build_date} 1` series of the
/// textfile (`status --prometheus`) and of `/metrics`, as Prometheus's own exporters name their build.
public struct BuildDescription: Sendable, Hashable {
    public var version: String
    /// The commit (`abc1234`, `abc1234-dirty`), or `unknown` for a plain `swift build`.
    public var commit: String
    /// `YYYY-MM-DD`, or `unknown`.
    public var buildDate: String

    public init(version: String, commit: String?, buildDate: String?) {
        self.version = version
        self.commit = commit ?? "unknown"
        self.buildDate = buildDate ?? "unknown"
    }

    /// When the caller does not say (a library user's status server).
    public static let unknown = BuildDescription(version: "unknown", commit: nil, buildDate: nil)

    public static let metricName = "syncgate_build_info"
    public static let metricHelp = "Which syncgate this is: version, commit and build date as labels; always 1."

    /// The series' labels, in order.
    public var labels: [(String, String)] {
        [("version", version), ("commit", commit), ("build_date", buildDate)]
    }
}
