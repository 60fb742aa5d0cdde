/// How one `sync` pass runs.
public struct SyncOptions: Sendable {
    /// Plan and report, change nothing.
    public var dryRun: Bool
    /// Only files that failed before (and are due, or were asked for with `syncgate retry`).
    public var onlyFailed: Bool
    /// Limit the run to these destinations (empty: all).
    public var destinations: [String]
    /// How long in-flight uploads may go on after an interruption before they are cut off (and left pending).
    public var interruptGrace: Duration
    /// Plans held per wave of a destination whose names cannot clash (see ``PlanningPass``); tests make it small.
    var waveSize = PlanningPass.defaultWaveSize
    /// Plan only these files (a gateway's pass over the files its watches saw change), instead of walking every
    /// source. A file that is gone, or not selected by its source's globs, is left alone.
    public var paths: [FileKey]?
    /// One pass of a long-running gateway: the destinations stay open after it (their connections, sessions and
    /// resumable uploads serve the next pass; ``Destination/startPass()`` renews what is per pass), rows left
    /// `uploading` are not reset (another destination's pass may be uploading them), runs are not recorded, and a
    /// destination that is away is probed only once its next probe is due.
    public var isGatewayPass = false
    /// Overrides every destination's `max_delete` for this run (`sync --max-delete N`).
    public var maxDelete: Int?
    /// The sources are as they should be (`sync --accept-source-changes`): no source is held back for looking gone
    /// away (``SourceJudge``), and each one's root and file count are recorded as this run finds them.
    public var acceptSourceChanges = false

    public init(dryRun: Bool = false, onlyFailed: Bool = false, destinations: [String] = [], interruptGrace: Duration = .seconds(3)) {
        self.dryRun = dryRun
        self.onlyFailed = onlyFailed
        self.destinations = destinations
        self.interruptGrace = interruptGrace
    }
}
