import Foundation

/// What the status page and API (and tests) see of a running gateway (`syncgate run`): its readiness, the same
/// report as `status --json`, its live operations and events, and the two things a person may ask of it.
public protocol GatewayObservable: Sendable {
    /// Config loaded, ledger open, watches set (`/readyz`).
    var isReady: Bool { get }
    /// The report `syncgate status --json` prints, read now (`/api/status`).
    func statusReport() async throws -> StatusReport
    /// Uploads in flight with their progress, recently completed and recently failed (kept as `recent:` says).
    var operations: OperationList { get }
    /// Every delivery event from now on, as `sync --json` prints them (`/api/events`); ends when the gateway stops
    /// or the caller stops iterating.
    func events() -> AsyncStream<DeliveryEvent>
    /// A signal each time what ``statusReport()`` reads has changed in the ledger (``Ledger/commits()``): a
    /// delivery event comes before its outcome is written, so a reader of the report after an event reads it
    /// again on this. Ends, like ``events()``, when the caller stops iterating.
    func recorded() -> AsyncStream<Void>
    /// Re-attempts failed files now (of one destination, of some paths; all when empty), and blocked destinations
    /// when no path is given, as `syncgate retry` does. Returns how many files were failed.
    func retry(destination: String?, paths: [String]) async throws -> Int
    /// Drops failed entries, as `syncgate forget` does. Returns how many.
    func forget(destination: String?, paths: [String]) async throws -> Int
    /// The gateway's own figures for `/metrics`, beside the ledger's.
    var figures: GatewayFigures { get }
}

/// What a gateway counts of itself (not in the ledger).
public struct GatewayFigures: Sendable, Hashable {
    /// Files seen changed and not planned yet (settling, or waiting for their destination's pass).
    public var queueDepth: Int
    /// When the last pass over every source ended (nil: none yet).
    public var lastCompletePass: Date?
    /// Passes run since the gateway started.
    public var passes: Int

    public init(queueDepth: Int = 0, lastCompletePass: Date? = nil, passes: Int = 0) {
        self.queueDepth = queueDepth
        self.lastCompletePass = lastCompletePass
        self.passes = passes
    }
}
