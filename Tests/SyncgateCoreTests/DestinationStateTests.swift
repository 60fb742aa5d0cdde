import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// Destinations come and go: an error about the destination (unreachable, credentials rejected, throttling) is
/// one state of that destination, not a failure of each of its files. The real engine and ledger, with a
/// destination that is away, blocked or throttling on command.
@Suite("destination states: unavailable, blocked, throttled")
struct DestinationStateTests {
    let dir: TemporaryDirectory

    init() throws { dir = try TemporaryDirectory("sg-away") }

    func engine(_ flaky: FlakyDestination, retry: String = "{ file: 2, artwork: 2, base_delay: 1s, max_delay: 4s, jitter: none }",
                extra: String = "", concurrency: Int = 4, clock: VirtualClock = VirtualClock(start: Date())) throws -> SyncEngine {
        let registry = PluginRegistry([PluginRegistration(type: "flaky", summary: "test") { setup in
            _ = try setup.decode(EngineTests.Empty.self)
            return flaky
        }])
        let config = try GatewayConfig.parse(text: """
            version: 1
            state: state/ledger.sqlite
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: car
                type: flaky
                concurrency: \(concurrency)
                retry: \(retry)
            \(extra)
            """, file: "plugins.yaml", baseDirectory: dir.url, registry: registry)
        return SyncEngine(config: config, ledger: try Ledger(path: config.statePath), clock: clock)
    }

    func writeOutbox(_ count: Int) throws {
        for i in 0..<count { try dir.write("outbox/f\(i).txt", "file \(i)") }
    }

    func entries(_ engine: SyncEngine) async throws -> [LedgerEntry] { try await engine.ledger.entries(destination: "car") }

    @Test func anUnreachableDestinationLeavesEveryFilePendingAndTheNextRunSendsThemAll() async throws {
        defer { dir.remove() }
        try writeOutbox(40)
        let flaky = FlakyDestination()
        flaky.awayError = .unavailable("connect to 127.0.0.1:1: connection refused", code: "connection")
        let engine = try engine(flaky)

        var summary = try await engine.run()
        #expect(summary.exitCode == 75)
        #expect(summary.failed == 0 && summary.failedRetryable == 0)
        #expect(summary.waiting == 40)
        #expect(summary.away.map(\.name) == ["car"])
        #expect(summary.away.first?.state == .unavailable)
        #expect(summary.away.first?.waiting == 40)
        // Nothing more was tried once the first attempts met the error: at most the uploads already in flight.
        #expect(flaky.totalAttempts <= 4, "\(flaky.totalAttempts) attempts")
        let rows = try await entries(engine)
        #expect(rows.count == 40)
        #expect(rows.allSatisfy { $0.status == .pending && $0.attempts == 0 && $0.nextRetryAt == nil && $0.firstFailedAt == nil },
                "\(rows.filter { $0.status != .pending || $0.attempts != 0 }.prefix(2))")
        let record = try await #require(try engine.ledger.destinationRecords()["car"])
        #expect(record.state == .unavailable)
        #expect(record.lastError?.contains("connection refused") == true)

        // Still away: the next run probes once and tries no file.
        let before = flaky.totalAttempts
        summary = try await engine.run()
        #expect(summary.exitCode == 75)
        #expect(flaky.probes == 1)
        #expect(flaky.totalAttempts == before)
        await #expect(try engine.ledger.destinationRecords()["car"]?.since == record.since)

        // It answers again: the next run sends everything that waited, at once.
        flaky.awayError = nil
        summary = try await engine.run()
        #expect(summary.exitCode == 0, "\(summary)")
        #expect(summary.uploaded == 40)
        #expect(flaky.probes == 2)
        await #expect(try entries(engine).allSatisfy { $0.status == .synced && $0.attempts == 1 })
        await #expect(try engine.ledger.destinationRecords()["car"]?.state == .available)
    }

    @Test func aDestinationFailingEveryAttemptIsUnavailableOnceNoTrialSucceedsWithinUnavailableWait() async throws {
        defer { dir.remove() }
        try writeOutbox(10)
        let flaky = FlakyDestination(transientFailures: 1000)  // every attempt: "busy" (a 5xx)
        let clock = VirtualClock(start: Date())
        let engine = try engine(flaky, retry: "{ file: 5, artwork: 5, base_delay: 1s, max_delay: 1s, jitter: none }", clock: clock)
        let summary = try await engine.run()
        #expect(summary.exitCode == 75)
        #expect(summary.failed == 0)
        #expect(summary.waiting == 10)
        // About ten attempts open the breaker (and those in flight then end: up to the concurrency, twice); then one
        // trial per cool-down (1, 2, 4, 8, 8... s) until 30 s. Sixty attempts (ten files, six each) were allowed.
        #expect(flaky.totalAttempts <= CircuitBreaker.minimumAttempts + 2 * 4 + 6, "\(flaky.totalAttempts) attempts")
        let record = try await #require(try engine.ledger.destinationRecords()["car"])
        #expect(record.state == .unavailable)
        #expect(record.lastError?.contains("of the last") == true, "\(record.lastError ?? "")")
        #expect(record.lastError?.contains("unavailable_wait") == true, "\(record.lastError ?? "")")
        // The failures that opened the breaker are the destination's: no file carries a failure or a retry schedule.
        await #expect(try entries(engine).allSatisfy { $0.status == .pending && $0.nextRetryAt == nil })
    }

    /// A flaky server (random 5xx on 30% of attempts) is not an absent one: every file goes in one run.
    @Test(arguments: [0.1, 0.3])
    func aFlakyDestinationGetsEveryFileInOneRun(fraction: Double) async throws {
        defer { dir.remove() }
        try writeOutbox(500)
        let flaky = FlakyDestination()
        flaky.failureFraction = fraction
        flaky.failureSeed = 2026
        let engine = try engine(flaky, retry: "{ file: 2, artwork: 2, base_delay: 100ms, max_delay: 1s, jitter: full }", concurrency: 8)
        let summary = try await engine.run()
        // A file may spend its three attempts at random (0.3^3 = 2.7% of files at 30%): it is the file's failure,
        // retried by a later run; the destination is never judged away.
        #expect(summary.away.isEmpty, "\(summary.away)")
        #expect(summary.waiting == 0)
        #expect(summary.uploaded + summary.failedRetryable == 500, "\(summary)")
        await #expect(try engine.ledger.destinationRecords()["car"]?.state == .available)
        #expect(summary.uploaded >= 450, "\(summary.uploaded)")
    }

    /// A server that fails everything for a while and then recovers: the run waits in half-open and finishes.
    @Test func aDestinationThatFailsForAWhileIsWaitedForInHalfOpenAndTheRunFinishes() async throws {
        defer { dir.remove() }
        try writeOutbox(200)
        let flaky = FlakyDestination()
        flaky.awayError = .retryable("HTTP 500 InternalError", code: "InternalError")
        flaky.awayAttempts = 14  // the first fourteen attempts fail: the breaker opens, and its first trials fail
        let engine = try engine(flaky, retry: "{ file: 2, artwork: 2, base_delay: 100ms, max_delay: 1s, jitter: none }", concurrency: 8)
        let summary = try await engine.run()
        #expect(summary.exitCode == 0, "\(summary)")
        #expect(summary.uploaded == 200)
        #expect(summary.failed == 0 && summary.waiting == 0)
        #expect(flaky.storedNames.count == 200)
        await #expect(try engine.ledger.destinationRecords()["car"]?.state ?? .available == .available)
    }

    @Test func oneFileThatKeepsFailingIsTheFilesFailureNotTheDestinations() async throws {
        defer { dir.remove() }
        try writeOutbox(6)
        let flaky = FlakyDestination(transientFailures: 100)
        flaky.transientMarker = "f3"
        let engine = try engine(flaky)
        let summary = try await engine.run()
        #expect(summary.exitCode == 75)
        #expect(summary.uploaded == 5)
        #expect(summary.failedRetryable == 1)
        #expect(summary.away.isEmpty)
        #expect(flaky.attemptCount("f3.txt") == 3)
        await #expect(try engine.ledger.destinationRecords()["car"]?.state == .available)
    }

    @Test func blockedWaitsForItsSettingsToChange() async throws {
        defer { dir.remove() }
        try writeOutbox(12)
        let flaky = FlakyDestination()
        flaky.awayError = .blocked("HTTP 403 SignatureDoesNotMatch: the secret is wrong", code: "SignatureDoesNotMatch")
        flaky.fingerprint = "key-1"
        let engine = try engine(flaky)
        var summary = try await engine.run()
        #expect(summary.exitCode == 1)
        #expect(summary.failed == 0)
        #expect(summary.away.first?.state == .blocked)
        #expect(summary.away.first?.code == "SignatureDoesNotMatch")
        await #expect(try entries(engine).allSatisfy { $0.status == .pending && $0.attempts == 0 })

        // The same settings: not tried at all, still blocked.
        let attempts = flaky.totalAttempts
        summary = try await engine.run()
        #expect(summary.exitCode == 1)
        #expect(flaky.probes == 0)
        #expect(flaky.totalAttempts == attempts)

        // The credentials are fixed: the next run tries again and sends everything, without `syncgate retry`.
        flaky.awayError = nil
        flaky.fingerprint = "key-2"
        summary = try await engine.run()
        #expect(summary.exitCode == 0, "\(summary)")
        #expect(summary.uploaded == 12)
        #expect(flaky.probes == 1)
        await #expect(try engine.ledger.destinationRecords()["car"]?.state == .available)
    }

    @Test func retryUnblocksADestinationWhoseSettingsDidNotChange() async throws {
        defer { dir.remove() }
        try writeOutbox(3)
        let flaky = FlakyDestination()
        flaky.awayError = .blocked("invalid_grant: the key was revoked", code: "invalid_grant")
        let engine = try engine(flaky)
        #expect(try await engine.run().exitCode == 1)
        flaky.awayError = nil  // fixed on the server's side: nothing changed here
        #expect(try await engine.run().exitCode == 1)
        await #expect(try engine.ledger.unblock(destination: "car", at: Date()) == 1)
        let summary = try await engine.run(SyncOptions(onlyFailed: true))
        #expect(summary.exitCode == 0, "\(summary)")
        #expect(summary.uploaded == 3)
    }

    @Test func throttlingIsWaitedOutWithoutSpendingARetryAndLowersTheConcurrency() async throws {
        defer { dir.remove() }
        try writeOutbox(8)
        let flaky = FlakyDestination()
        flaky.awayError = .throttled("HTTP 429 RESOURCE_EXHAUSTED", code: "RESOURCE_EXHAUSTED", after: .seconds(1))
        flaky.awayAttempts = 2  // two throttled answers in a row
        let clock = VirtualClock(start: Date())
        let events = EventLog()
        // No retries at all: a throttled attempt must not need one.
        let engine = try engine(flaky, retry: "{ file: 0, artwork: 0, base_delay: 1s, max_delay: 4s, jitter: none }", clock: clock)
        let summary = try await engine.run(observe: { events.append($0) })
        #expect(summary.exitCode == 0, "\(summary)")
        #expect(summary.uploaded == 8)
        #expect(summary.failed == 0)
        #expect(clock.sleeps.contains(.seconds(1)))
        let retried = events.events.filter { $0.name == "retrying" }
        #expect(retried.count == 2)
        await #expect(try entries(engine).allSatisfy { $0.status == .synced })
    }

    @Test func throttlingLongerThanThrottleWaitLeavesTheRestPending() async throws {
        defer { dir.remove() }
        try writeOutbox(5)
        let flaky = FlakyDestination()
        flaky.awayError = .throttled("SlowDown: Please reduce your request rate.", code: "SlowDown", after: .seconds(20))
        let engine = try engine(flaky, extra: "    throttle_wait: 30s")
        let summary = try await engine.run()
        #expect(summary.exitCode == 75)
        #expect(summary.failed == 0)
        #expect(summary.waiting == 5)
        let record = try await #require(try engine.ledger.destinationRecords()["car"])
        #expect(record.state == .unavailable)
        #expect(record.lastError?.contains("throttle_wait") == true)
    }

    /// A destination that asked to be left alone (a destination-scoped answer with Retry-After) is not tried, nor
    /// probed, by later runs before then; after it, the next run probes and sends.
    @Test func aDestinationsRetryAfterIsKeptAndHonouredByLaterRuns() async throws {
        defer { dir.remove() }
        try writeOutbox(5)
        let flaky = FlakyDestination()
        flaky.awayError = .unavailable("HTTP 507 InsufficientStorage", code: "InsufficientStorage", after: .seconds(9))
        let clock = VirtualClock(start: Date())
        let engine = try engine(flaky, clock: clock)
        var summary = try await engine.run()
        #expect(summary.exitCode == 75)
        let record = try await #require(try engine.ledger.destinationRecords()["car"])
        let until = try #require(record.retryAfterUntil)
        #expect(abs(until.timeIntervalSince(clock.now()) - 9) < 1, "\(until) vs \(clock.now())")
        #expect(try #require(record.nextProbeAt) >= until)

        // A run 5 s later: neither probed nor tried, and it says why.
        flaky.awayError = nil
        clock.advance(by: 5)
        let attempts = flaky.totalAttempts
        summary = try await engine.run()
        #expect(summary.exitCode == 75)
        #expect(flaky.probes == 0)
        #expect(flaky.totalAttempts == attempts)
        #expect(summary.away.first?.error.contains("Retry-After") == true, "\(summary.away)")

        // Past it: probed once, everything sent, the Retry-After forgotten.
        clock.advance(by: 5)
        summary = try await engine.run()
        #expect(summary.exitCode == 0, "\(summary)")
        #expect(flaky.probes == 1)
        #expect(summary.uploaded == 5)
        await #expect(try engine.ledger.destinationRecords()["car"]?.retryAfterUntil == nil)
    }

    @Test func throttleHalvesTheConcurrencyAndGrowsItBackOneByOne() {
        let throttle = Throttle(concurrency: 8, budget: .seconds(120), clock: VirtualClock())
        #expect(throttle.limit == 8)
        #expect(throttle.throttled(for: .seconds(1)))
        #expect(throttle.limit == 4)
        #expect(throttle.throttled(for: .seconds(1)))
        #expect(throttle.limit == 2)
        for _ in 0..<2 { throttle.succeeded() }
        #expect(throttle.limit == 3)
        for _ in 0..<3 { throttle.succeeded() }
        #expect(throttle.limit == 4)
        // The budget counts the time paused, overlapping pauses once.
        let small = Throttle(concurrency: 2, budget: .seconds(5), clock: VirtualClock())
        #expect(small.throttled(for: .seconds(3)))
        #expect(small.throttled(for: .seconds(3)))  // overlaps: 3 s in all
        #expect(small.pausedSeconds == 3)
        #expect(!small.throttled(for: .seconds(6)))
    }

    @Test(arguments: LedgerEngine.testable) func giveUpAfterCountsOnlyTimeTheDestinationWasThere(engine: LedgerEngine) async throws {
        defer { dir.remove() }
        try await engine.withStates(dir) { state, _ in
            let ledger = try Ledger(state: try await state("state"))
            let t0 = Date(timeIntervalSince1970: 1_800_000_000)
            let file = FileKey(source: "outbox", path: "a.txt")
            let retry = RetrySettings(file: 1, artwork: 1, baseDelay: .seconds(1), maxDelay: .seconds(4), jitter: .none,
                                      maxRetryInterval: .seconds(3600), giveUpAfter: .seconds(7 * 86400))
            try await ledger.recordPending([Ledger.Pending(file: file, destination: "car", size: 1, modificationTime: t0, sha256: "x", contentChanged: false)], at: t0)
            try await ledger.markFailed(file, destination: "car", failure: DeliveryFailure(message: "busy", failureClass: .retryable(), attempts: 1), retry: retry, at: t0)
            // The car leaves an hour later and stays away 8 days.
            try await ledger.markAway("car", state: .unavailable, error: "connection refused", code: nil, fingerprint: nil, probeFailed: true,
                                probeIntervalMax: .seconds(60), at: t0 + 3600)
            let back = t0 + 3600 + 8 * 86400
            try await ledger.markAvailable("car", at: back)
            // It fails again right after coming back: an hour of reachable failing, not 8 days: not given up.
            try await ledger.markFailed(file, destination: "car", failure: DeliveryFailure(message: "busy", failureClass: .retryable(), attempts: 1), retry: retry, at: back + 60)
            let entry = try await #require(try ledger.entry(file, destination: "car"))
            #expect(entry.nextRetryAt != nil)
            #expect(abs((entry.firstFailedAt ?? .distantPast).timeIntervalSince(t0 + 8 * 86400)) < 0.001)
        }
    }

    @Test func probesAreSpacedTwoSecondsDoublingUpToTheMaximum() {
        #expect(RetryPolicy.probeInterval(failedProbes: 1, maximum: .seconds(60)) == .seconds(2))
        #expect(RetryPolicy.probeInterval(failedProbes: 2, maximum: .seconds(60)) == .seconds(4))
        #expect(RetryPolicy.probeInterval(failedProbes: 5, maximum: .seconds(60)) == .seconds(32))
        #expect(RetryPolicy.probeInterval(failedProbes: 6, maximum: .seconds(60)) == .seconds(60))
        #expect(RetryPolicy.probeInterval(failedProbes: 40, maximum: .seconds(60)) == .seconds(60))
    }
}
