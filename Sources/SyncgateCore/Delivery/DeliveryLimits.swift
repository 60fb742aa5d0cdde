import Foundation

/// The limits one destination is held to, shared by everything that uses it in the process (every pass of a
/// gateway, every upload in flight): `rate`, `min_interval` and `bandwidth` (``DeliverySettings``).
///
/// What counts as a request (`rate`): each request the core makes of the destination: an upload attempt (one per
/// file and attempt, however many HTTP requests the plugin makes inside it: the parts of an S3 multipart upload,
/// a Sheets append with its header read, a head unit's PutFile chunks), a check whether the destination holds a
/// file already (``Destination/existingCopy(of:)``), a delete (a batch delete is one), a listing and a probe.
/// What a plugin does on its own (credentials, S3's listing of the folders it is about to check) is not counted.
///
/// `min_interval` spaces the starts of uploads (attempts, retries included); `bandwidth` paces the bytes the
/// plugins read from disk to send (``FileReader/paceSending(_:)``). None of them is a throttle: they hold whatever
/// the destination answers, and ``Throttle`` lowers the concurrency on top of them when it answers 429.
public final class DeliveryLimits: Sendable {
    public let requests: TokenBucket?
    public let uploadStarts: TokenBucket?
    public let bandwidth: TokenBucket?
    /// The settings they were made from.
    let rate: RateLimit?
    let minInterval: Duration
    let schedule: BandwidthSchedule?

    /// An idle bandwidth bucket holds this much of a second's bytes: a short burst, so that the rate measured over
    /// a few seconds is the rate configured.
    public static let bandwidthBurstSeconds = 0.1

    public init(rate: RateLimit?, minInterval: Duration, bandwidth: BandwidthSchedule?) {
        self.rate = rate
        self.minInterval = minInterval
        self.schedule = bandwidth
        requests = rate.map { TokenBucket(perSecond: $0.requestsPerSecond, burst: Double($0.burst)) }
        uploadStarts = minInterval > .zero ? TokenBucket(perSecond: 1 / minInterval.seconds, burst: 1) : nil
        self.bandwidth = bandwidth.map { TokenBucket(schedule: $0, burstSeconds: DeliveryLimits.bandwidthBurstSeconds) }
    }

    public convenience init(_ settings: DeliverySettings) {
        self.init(rate: settings.rate, minInterval: settings.minInterval, bandwidth: settings.bandwidth)
    }

    /// Whether these are the limits `settings` asks for.
    func match(_ settings: DeliverySettings) -> Bool {
        rate == settings.rate && minInterval == settings.minInterval && schedule == settings.bandwidth
    }

    /// Waits until one more request may start (`rate`).
    public func beforeRequest(clock: any SyncClock, cancellation: CancellationHandle? = nil) async throws {
        try await requests?.take(1, clock: clock, cancellation: cancellation)
    }

    /// Waits until one more upload may start: `min_interval` after the last start, and a request under `rate`.
    public func beforeUpload(clock: any SyncClock, cancellation: CancellationHandle? = nil) async throws {
        try await uploadStarts?.take(1, clock: clock, cancellation: cancellation)
        try await beforeRequest(clock: clock, cancellation: cancellation)
    }

    /// The pacing an upload's file reads get (nil when there is no bandwidth limit).
    func pacing(clock: any SyncClock, whileWaiting: @escaping @Sendable (Bool) -> Void) -> SendPacing? {
        bandwidth.map { SendPacing(bucket: $0, clock: clock, whileWaiting: whileWaiting) }
    }
}

/// The bandwidth limit an upload's file reads obey, found by ``FileReader`` when it is opened inside an upload
/// (a task-local value the delivery layer sets around ``Destination/upload(_:progress:)``). `whileWaiting` tells
/// the attempt's watchdog that the attempt is paced, not stuck.
public struct SendPacing: Sendable {
    let bucket: TokenBucket
    let clock: any SyncClock
    let whileWaiting: @Sendable (Bool) -> Void

    @TaskLocal public static var current: SendPacing?

    /// A pacing by `bucket` (a destination's is made by the delivery layer; `plugin check` makes its own).
    public init(bucket: TokenBucket, clock: any SyncClock = SystemClock(), whileWaiting: @escaping @Sendable (Bool) -> Void = { _ in }) {
        self.bucket = bucket
        self.clock = clock
        self.whileWaiting = whileWaiting
    }

    /// Waits until `bytes` more may go (an external plugin's reads are paced by granting its asks for bytes).
    public func pace(_ bytes: Int) async throws {
        guard bytes > 0 else { return }
        try await bucket.take(Double(bytes), clock: clock, whileWaiting: whileWaiting)
    }
}
