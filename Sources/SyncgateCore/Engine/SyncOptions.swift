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

    public init(dryRun: Bool = false, onlyFailed: Bool = false, destinations: [String] = [], interruptGrace: Duration = .seconds(3)) {
        self.dryRun = dryRun
        self.onlyFailed = onlyFailed
        self.destinations = destinations
        self.interruptGrace = interruptGrace
    }
}
