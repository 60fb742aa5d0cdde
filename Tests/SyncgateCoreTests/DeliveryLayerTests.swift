import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// Collects delivery events (from many tasks).
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [DeliveryEvent] = []
    func append(_ e: DeliveryEvent) { lock.withLock { list.append(e) } }
    var events: [DeliveryEvent] { lock.withLock { list } }
    func names(for path: String) -> [String] { events.filter { $0.file.path == path }.map(\.name) }
}

@Suite("delivery layer: retries, backoff, classification, concurrency, transfers")
struct DeliveryLayerTests {
    let dir: TemporaryDirectory

    init() throws {
        dir = try TemporaryDirectory("sg-delivery")
    }

    func item(_ path: String, artwork: Bool = false, bytes: Int = 3000) throws -> UploadItem {
        let url = try dir.write(path, Data((0..<bytes).map { UInt8($0 % 251) }))
        let stat = try #require(FileStat.of(url.path))
        return UploadItem(source: "s", relativePath: path, absolutePath: url.path, remoteName: path, size: stat.size,
                          modificationTime: stat.modificationTime, sha256: "x", isArtwork: artwork)
    }

    /// The attempt timeout is a real-time safety net; these tests run on a virtual clock and must not meet it even
    /// when the whole suite keeps the machine busy, so it is long unless a test is about it.
    func settings(file: Int, artwork: Int, concurrency: Int = 4, timeout: Duration = .seconds(600)) -> DeliverySettings {
        DeliverySettings(
            concurrency: concurrency,
            retry: RetrySettings(file: file, artwork: artwork, baseDelay: .seconds(1), maxDelay: .seconds(8), jitter: .none,
                                 maxRetryInterval: .seconds(3600), giveUpAfter: .seconds(86400)),
            recentCompleted: .seconds(10), recentFailed: .seconds(60), attemptTimeout: timeout
        )
    }

    @Test func transientFailuresAreRetriedWithExponentialBackoff() async throws {
        defer { dir.remove() }
        let destination = FlakyDestination(transientFailures: 3)
        let clock = VirtualClock()
        let log = EventLog()
        let layer = DeliveryLayer(destinationName: "d", destination: destination, settings: settings(file: 3, artwork: 0), clock: clock, onEvent: { log.append($0) })
        let result = await layer.deliver(try item("a.txt"))
        let receipt = try result.get()
        #expect(receipt.remoteName == "a.txt")
        #expect(destination.attemptCount("a.txt") == 4)
        #expect(clock.sleeps == [.seconds(1), .seconds(2), .seconds(4)])
        #expect(log.names(for: "a.txt") == ["started", "retrying", "started", "retrying", "started", "retrying", "started", "synced"])
        #expect(destination.contents("a.txt")?.count == 3000)
    }

    @Test func artworkAndFilesUseTheirOwnRetryCountsAndZeroDisables() async throws {
        defer { dir.remove() }
        let destination = FlakyDestination(transientFailures: 2)
        let layer = DeliveryLayer(destinationName: "d", destination: destination, settings: settings(file: 0, artwork: 2), clock: VirtualClock())
        let art = await layer.deliver(try item("cover.png", artwork: true))
        let doc = await layer.deliver(try item("notes.txt"))
        #expect((try? art.get()) != nil)
        #expect(destination.attemptCount("cover.png") == 3)
        guard case .failure(let failure) = doc else {
            Issue.record("a file with 0 retries must fail after one attempt")
            return
        }
        #expect(destination.attemptCount("notes.txt") == 1)
        #expect(failure.attempts == 1)
        #expect(failure.failureClass == .retryable())
        #expect(failure.message.contains("Busy"))
    }

    @Test func permanentErrorsAreNotRetried() async throws {
        defer { dir.remove() }
        let destination = FlakyDestination(permanentMarker: "bad")
        let clock = VirtualClock()
        let layer = DeliveryLayer(destinationName: "d", destination: destination, settings: settings(file: 5, artwork: 5), clock: clock)
        let result = await layer.deliver(try item("bad.txt"))
        guard case .failure(let failure) = result else {
            Issue.record("expected a failure")
            return
        }
        #expect(failure.failureClass == .permanent)
        #expect(failure.code == "Refused")
        #expect(destination.attemptCount("bad.txt") == 1)
        #expect(clock.sleeps.isEmpty)
    }

    @Test func retryAfterIsHonoured() async throws {
        defer { dir.remove() }
        let destination = FlakyDestination(transientFailures: 1, retryAfter: .seconds(30))
        let clock = VirtualClock()
        let layer = DeliveryLayer(destinationName: "d", destination: destination, settings: settings(file: 1, artwork: 1), clock: clock)
        _ = try await layer.deliver(try item("a.txt")).get()
        #expect(clock.sleeps == [.seconds(30)])
    }

    @Test func deferredAttemptsDoNotBurnRetries() async throws {
        defer { dir.remove() }
        let destination = FlakyDestination(deferFirst: 4)
        let clock = VirtualClock()
        let layer = DeliveryLayer(destinationName: "d", destination: destination, settings: settings(file: 0, artwork: 0), clock: clock)
        _ = try await layer.deliver(try item("a.txt")).get()
        #expect(destination.attemptCount("a.txt") == 5)
        #expect(clock.sleeps == Array(repeating: .milliseconds(500), count: 4))
    }

    @Test func attemptTimeoutIsRetryable() async throws {
        defer { dir.remove() }
        // An upload that would only end on its own after an hour: only the attempt timeout can end it. (With 30 s,
        // a CI run whose threads were all busy for the first minute let the upload's own sleep end first: the
        // watchdog and the upload need the same threads, so the one that runs first wins.)
        let destination = FlakyDestination(uploadDelay: .seconds(3600))
        let layer = DeliveryLayer(destinationName: "d", destination: destination,
                                  settings: settings(file: 1, artwork: 1, timeout: .milliseconds(200)), clock: VirtualClock())
        let result = await layer.deliver(try item("slow.txt"))
        guard case .failure(let failure) = result else {
            Issue.record("expected a timeout")
            return
        }
        #expect(failure.message.contains("timed out"))
        #expect(failure.failureClass == .retryable())
        #expect(destination.attemptCount("slow.txt") == 2)
    }

    @Test func uploadManyRespectsConcurrencyReportsBytesAndReturnsAnErrorMap() async throws {
        defer { dir.remove() }
        let destination = FlakyDestination(permanentMarker: "bad", uploadDelay: .milliseconds(20))
        let layer = DeliveryLayer(destinationName: "d", destination: destination, settings: settings(file: 1, artwork: 1, concurrency: 3), clock: VirtualClock())
        var items: [UploadItem] = []
        for i in 0..<12 { items.append(try item("f\(i).bin", bytes: 1000)) }
        items.append(try item("bad-1.bin", bytes: 1000))
        let fractions = FractionLog()
        let failures = await layer.uploadMany(items) { fractions.append($0) }
        #expect(Set(failures.keys.map(\.path)) == ["bad-1.bin"])
        #expect(failures.values.first?.failureClass == .permanent)
        #expect(destination.maxInFlight <= 3)
        #expect(destination.maxInFlight >= 2)
        #expect(destination.storedNames.count == 12)
        let values = fractions.values
        #expect(values.max().map { abs($0 - 12.0 / 13.0) < 0.0001 } == true)
        #expect(values.allSatisfy { $0 >= 0 && $0 <= 1 })
        #expect(fractions.errors == ["bad-1.bin"])
    }

    @Test func cancellingStopsTheRest() async throws {
        defer { dir.remove() }
        let destination = FlakyDestination(uploadDelay: .milliseconds(20))
        let layer = DeliveryLayer(destinationName: "d", destination: destination, settings: settings(file: 1, artwork: 1, concurrency: 1), clock: VirtualClock())
        var items: [UploadItem] = []
        for i in 0..<10 { items.append(try item("f\(i).bin", bytes: 100)) }
        let failures = await layer.uploadMany(items) { progress in
            if progress.file.path == "f1.bin", progress.fileBytesDone == progress.fileBytesTotal { progress.cancelRest() }
        }
        #expect(destination.storedNames.count == 2)
        #expect(failures.count == 8)
        #expect(failures.values.allSatisfy { $0.isCancellation })
    }

    @Test func deleteManyReportsEachName() async throws {
        defer { dir.remove() }
        let destination = FlakyDestination()
        let layer = DeliveryLayer(destinationName: "d", destination: destination, settings: settings(file: 2, artwork: 2), clock: VirtualClock())
        _ = try await layer.deliver(try item("keep.txt")).get()
        _ = try await layer.deliver(try item("gone.txt")).get()
        let failures = await layer.deleteMany(["gone.txt", "missing.txt"])
        #expect(Set(failures.keys) == ["missing.txt"])
        #expect(failures["missing.txt"]?.failureClass == .permanent)
        #expect(destination.storedNames == ["keep.txt"])
    }

    /// A single-name delete that fails retryably is retried with backoff, as uploads are (it once returned the
    /// failure after its first backoff sleep).
    @Test func aSingleDeleteThatFailsRetryablyIsRetried() async throws {
        defer { dir.remove() }
        let destination = FlakyDestination()
        let clock = VirtualClock()
        let layer = DeliveryLayer(destinationName: "d", destination: destination, settings: settings(file: 2, artwork: 2), clock: clock)
        _ = try await layer.deliver(try item("gone.txt")).get()
        destination.deleteFailures = 2
        let failures = await layer.deleteMany(["gone.txt"])
        #expect(failures.isEmpty, "\(failures)")
        #expect(destination.deletes == ["gone.txt", "gone.txt", "gone.txt"])
        #expect(clock.sleeps == [.seconds(1), .seconds(2)])
        #expect(destination.storedNames.isEmpty)

        // More failures than retries: the name fails, retryably, after retry.file + 1 attempts.
        _ = try await layer.deliver(try item("again.txt")).get()
        destination.deleteFailures = 5
        let spent = await layer.deleteMany(["again.txt"])
        #expect(spent["again.txt"]?.failureClass.isRetryable == true)
        #expect(spent["again.txt"]?.attempts == 3)
    }

    @Test func aFileChangedDuringUploadIsNotCountedDelivered() async throws {
        defer { dir.remove() }
        var planned = try item("moving.txt")
        planned.size += 1  // the file on disk no longer matches what was planned
        let layer = DeliveryLayer(destinationName: "d", destination: FlakyDestination(), settings: settings(file: 0, artwork: 0), clock: VirtualClock())
        let result = await layer.deliver(planned)
        guard case .failure(let failure) = result else {
            Issue.record("expected a failure")
            return
        }
        #expect(failure.message.contains("changed while it was being sent"))
        #expect(failure.failureClass.isRetryable)
    }

    @Test func classificationOfCommonErrors() {
        #expect(Classification.of(POSIXError(.ECONNREFUSED)) == Classification(.retryable(), scope: .destination))
        #expect(Classification.of(POSIXError(.ECONNRESET)) == Classification(.retryable(), scope: .file))
        #expect(Classification.of(POSIXError(.EACCES)) == Classification(.permanent))
        #expect(Classification.of(AttemptTimeoutError(timeout: .seconds(1))) == Classification(.retryable()))
        #expect(Classification.of(DestinationError.permanent("auth")) == Classification(.permanent))
        #expect(Classification.of(DestinationError.retryable("503", after: .seconds(2))) == Classification(.retryable(after: .seconds(2))))
        #expect(Classification.of(DestinationError.blocked("InvalidAccessKeyId")) == Classification(.permanent, scope: .destination))
    }
}

final class FractionLog: @unchecked Sendable {
    private let lock = NSLock()
    private var fractions: [Double] = []
    private var failed: [String] = []
    func append(_ p: TransferProgress) {
        lock.withLock {
            fractions.append(p.fractionCompleted)
            if p.error != nil { failed.append(p.file.path) }
        }
    }
    var values: [Double] { lock.withLock { fractions } }
    var errors: [String] { lock.withLock { failed } }
}

/// A destination whose every attempt fails on a fresh connection.
final class DroppingDestination: Destination, @unchecked Sendable {
    private let lock = NSLock()
    private var connections = 0
    private(set) var attempts = 0
    let succeedAt: Int

    init(succeedAt: Int) { self.succeedAt = succeedAt }

    var connectionGeneration: Int { get async { lock.withLock { connections } } }

    func upload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt {
        let n = lock.withLock { () -> Int in
            connections += 1
            attempts += 1
            return attempts
        }
        if n < succeedAt { throw DestinationError.retryable("connection lost", code: "connection-lost") }
        return Receipt(remoteName: item.remoteName)
    }
    func delete(remoteName: String) async throws {}
    func list() async throws -> RemoteListing { RemoteListing(entries: []) }
}

@Suite("failure counts per connection")
struct ConnectionGenerationTests {
    func item(_ dir: TemporaryDirectory) throws -> UploadItem {
        let url = try dir.write("a.txt", "a")
        let stat = try #require(FileStat.of(url.path))
        return UploadItem(source: "s", relativePath: "a.txt", absolutePath: url.path, remoteName: "a.txt", size: stat.size,
                          modificationTime: stat.modificationTime, sha256: "x", isArtwork: false)
    }

    func settings(retries: Int) -> DeliverySettings {
        DeliverySettings(concurrency: 1, retry: RetrySettings(file: retries, artwork: retries, baseDelay: .seconds(1), maxDelay: .seconds(2),
                                                              jitter: .none, maxRetryInterval: .seconds(60), giveUpAfter: .seconds(600)),
                         recentCompleted: .seconds(1), recentFailed: .seconds(1), attemptTimeout: .seconds(30))
    }

    @Test func countsStartAfreshOnANewConnectionUpToACap() async throws {
        let dir = try TemporaryDirectory("sg-generation")
        defer { dir.remove() }
        // One retry allowed, but every failure happened on its own connection: a fifth attempt still goes out.
        let recovering = DroppingDestination(succeedAt: 5)
        let layer = DeliveryLayer(destinationName: "car", destination: recovering, settings: settings(retries: 1), clock: VirtualClock())
        _ = try await layer.deliver(try item(dir)).get()
        #expect(recovering.attempts == 5)

        // Never recovering: bounded by (retries + 1) * connectionResetLimit attempts.
        let hopeless = DroppingDestination(succeedAt: 1000)
        let bounded = DeliveryLayer(destinationName: "car", destination: hopeless, settings: settings(retries: 1), clock: VirtualClock())
        let result = await bounded.deliver(try item(dir))
        #expect((try? result.get()) == nil)
        #expect(hopeless.attempts == 2 * DeliveryLayer.connectionResetLimit)
    }
}

@Suite("a long Retry-After is honoured by scheduling")
struct LongRetryAfterTests {
    @Test func aRetryAfterLongerThanAMinuteEndsTheRunAndSchedulesTheNextNoSooner() async throws {
        let dir = try TemporaryDirectory("sg-retry-after")
        defer { dir.remove() }
        let url = try dir.write("a.txt", "a")
        let stat = try #require(FileStat.of(url.path))
        let item = UploadItem(source: "s", relativePath: "a.txt", absolutePath: url.path, remoteName: "a.txt", size: stat.size,
                              modificationTime: stat.modificationTime, sha256: "x", isArtwork: false)
        let destination = FlakyDestination(transientFailures: 1, retryAfter: .seconds(1800))
        let clock = VirtualClock()
        let settings = DeliverySettings(concurrency: 1, retry: RetrySettings(file: 3, artwork: 3, baseDelay: .seconds(1), maxDelay: .seconds(20),
                                                                             jitter: .none, maxRetryInterval: .seconds(3600), giveUpAfter: .seconds(86400)),
                                        recentCompleted: .seconds(1), recentFailed: .seconds(1), attemptTimeout: .seconds(600))
        let layer = DeliveryLayer(destinationName: "d", destination: destination, settings: settings, clock: clock)
        let result = await layer.deliver(item)
        guard case .failure(let failure) = result else {
            Issue.record("expected the run to stop trying")
            return
        }
        #expect(clock.sleeps.isEmpty, "no in-run sleep of half an hour")
        #expect(failure.retryAfter == .seconds(1800))
        let ledger = try Ledger(path: dir.file("state.sqlite").path)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        try await ledger.recordPending([Ledger.Pending(file: item.key, destination: "d", size: 1, modificationTime: now, sha256: "x", contentChanged: false)], at: now)
        try await ledger.markFailed(item.key, destination: "d", failure: failure, retry: settings.retry, at: now)
        await #expect(try ledger.entry(item.key, destination: "d")?.nextRetryAt == now + 1800)
    }
}

/// A destination that deletes in batches; the first batch call fails for one name retryably.
final class BatchDeleting: Destination, @unchecked Sendable {
    private let lock = NSLock()
    private(set) var calls: [[String]] = []
    var supportsBatchDelete: Bool { true }
    func upload(_ item: UploadItem, progress: @escaping @Sendable (Int64) -> Void) async throws -> Receipt { Receipt(remoteName: item.remoteName) }
    func delete(remoteName: String) async throws { Issue.record("the batch call must be used") }
    func list() async throws -> RemoteListing { RemoteListing(entries: []) }
    func delete(remoteNames: [String]) async throws -> [String: DestinationError] {
        let first = lock.withLock { () -> Bool in
            calls.append(remoteNames)
            return calls.count == 1
        }
        var failures: [String: DestinationError] = [:]
        if remoteNames.contains("denied") { failures["denied"] = .permanent("AccessDenied", code: "AccessDenied") }
        if first, remoteNames.contains("busy") { failures["busy"] = .retryable("SlowDown", code: "SlowDown") }
        return failures
    }
}

@Suite("batch deletes")
struct BatchDeleteTests {
    @Test func retryableNamesAreRetriedAloneAndEachNameHasItsResult() async {
        let destination = BatchDeleting()
        let settings = DeliverySettings(concurrency: 1, retry: RetrySettings(file: 2, artwork: 2, baseDelay: .seconds(1), maxDelay: .seconds(2), jitter: .none,
                                                                             maxRetryInterval: .seconds(60), giveUpAfter: .seconds(600)),
                                        recentCompleted: .seconds(1), recentFailed: .seconds(1), attemptTimeout: .seconds(600))
        let clock = VirtualClock()
        let failures = await DeliveryLayer(destinationName: "d", destination: destination, settings: settings, clock: clock).deleteMany(["a", "busy", "denied", "b"])
        #expect(Set(failures.keys) == ["denied"])
        #expect(failures["denied"]?.failureClass == .permanent)
        #expect(destination.calls == [["a", "busy", "denied", "b"], ["busy"]])
        #expect(clock.sleeps == [.seconds(1)])
    }
}
