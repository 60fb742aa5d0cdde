import Foundation
import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport
import Testing

/// `rate`, `min_interval` and `bandwidth` (issue 18): the token bucket's schedule and the timetable, on explicit
/// times and a virtual clock (no wall-clock timing here: rates are measured in `scripts/bench --only limits`); their
/// config keys and located errors; and the delivery layer holding uploads to the real local destination to them.
@Suite("delivery limits: token bucket, bandwidth timetable, min_interval, rate")
struct DeliveryLimitsTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func seconds(_ delay: Duration?) -> Double { delay?.seconds ?? 0 }

    // MARK: - Token bucket

    @Test func aBucketLetsItsBurstGoThenOneRequestPerInterval() {
        let bucket = TokenBucket(perSecond: 20, burst: 3)
        let tickets = (0..<8).map { _ in bucket.reserve(1, at: t0) }
        let waits = tickets.map { seconds(bucket.delay(for: $0, at: t0)) }
        // Three at once, then 1/20 s apart, in the order they were reserved.
        #expect(waits.prefix(3).allSatisfy { $0 == 0 })
        for (index, wait) in waits.enumerated().dropFirst(3) {
            #expect(abs(wait - Double(index - 2) * 0.05) < 1e-5, "reservation \(index) waits \(wait) s")
        }
        // Once its time came, the fourth goes.
        #expect(bucket.delay(for: tickets[3], at: t0.addingTimeInterval(0.05)) == nil)
        #expect(bucket.delay(for: tickets[4], at: t0.addingTimeInterval(0.05)) != nil)
    }

    @Test func anIdleBucketSavesNoMoreThanItsBurst() {
        let bucket = TokenBucket(perSecond: 10, burst: 2)
        _ = bucket.reserve(1, at: t0)
        // An hour idle: still only two at once.
        let later = t0.addingTimeInterval(3600)
        let tickets = (0..<3).map { _ in bucket.reserve(1, at: later) }
        #expect(bucket.delay(for: tickets[0], at: later) == nil)
        #expect(bucket.delay(for: tickets[1], at: later) == nil)
        #expect(abs(seconds(bucket.delay(for: tickets[2], at: later)) - 0.1) < 1e-5)
    }

    @Test func aChunkLargerThanTheBurstWaitsForWhatItTakes() {
        // 1 MiB/s with a tenth of a second's bytes saved: a 1 MiB chunk waits 0.9 s, the next one 1 s more.
        let bucket = TokenBucket(schedule: .constant(1 << 20), burstSeconds: 0.1)
        let first = bucket.reserve(Double(1 << 20), at: t0)
        let second = bucket.reserve(Double(1 << 20), at: t0)
        #expect(abs(seconds(bucket.delay(for: first, at: t0)) - 0.9) < 1e-5)
        // The second chunk waits one second more.
        #expect(abs(seconds(bucket.delay(for: second, at: t0)) - 1.9) < 1e-5)
        #expect(bucket.delay(for: first, at: t0.addingTimeInterval(0.9)) == nil)
    }

    @Test func aClockThatGoesBackOwesNothingForTheLostTime() {
        let bucket = TokenBucket(perSecond: 1, burst: 1)
        _ = bucket.reserve(1, at: t0)
        let ticket = bucket.reserve(1, at: t0)
        // The clock is set back an hour: the wait is still one second from there, not an hour and a second.
        let back = t0.addingTimeInterval(-3600)
        #expect(abs(seconds(bucket.delay(for: ticket, at: back)) - 1) < 1e-5)
        #expect(bucket.delay(for: ticket, at: back.addingTimeInterval(1)) == nil)
    }

    @Test func takeSleepsOnTheGivenClockAndCountsItsWaits() async throws {
        let clock = VirtualClock(start: t0)
        let bucket = TokenBucket(perSecond: 4, burst: 1)
        for _ in 0..<9 { try await bucket.take(1, clock: clock) }
        // Eight waits of a quarter of a second: two seconds of the virtual clock.
        #expect(bucket.waitCount == 8)
        #expect(abs(clock.now().timeIntervalSince(t0) - 2) < 1e-4)
        #expect(clock.sleeps.allSatisfy { $0 <= .seconds(1) })
    }

    @Test func aCancelledWaiterStops() async throws {
        let clock = VirtualClock(start: t0)
        let bucket = TokenBucket(perSecond: 0.001, burst: 1)  // one request per 1000 s
        try await bucket.take(1, clock: clock)
        let handle = CancellationHandle()
        handle.cancel()
        await #expect(throws: CancellationError.self) { try await bucket.take(1, clock: clock, cancellation: handle) }
    }

    // MARK: - Bandwidth timetable

    func utc(_ hour: Int, _ minute: Int, day: Int = 0) -> Date {
        // 1_800_000_000 is 2027-01-15 08:00:00 UTC; midnight of that day:
        let midnight = Date(timeIntervalSince1970: 1_800_000_000 - 8 * 3600)
        return midnight.addingTimeInterval(Double(day * 86400 + hour * 3600 + minute * 60))
    }

    @Test func aTimetableHoldsEachRateUntilTheNextTimeAndWrapsOverMidnight() throws {
        let schedule = try BandwidthSchedule.parse("08:00,512KiB 12:00,10MiB 19:00,off", timeZone: TimeZone(identifier: "UTC")!)
        #expect(schedule.entries.map(\.minute) == [480, 720, 1140])
        #expect(schedule.bytesPerSecond(at: utc(7, 59)) == nil)  // 19:00's "off" holds over midnight
        #expect(schedule.bytesPerSecond(at: utc(8, 0)) == 512 << 10)
        #expect(schedule.bytesPerSecond(at: utc(11, 59)) == 512 << 10)
        #expect(schedule.bytesPerSecond(at: utc(12, 0)) == 10 << 20)
        #expect(schedule.bytesPerSecond(at: utc(19, 0)) == nil)
        #expect(schedule.nextChange(after: utc(7, 0)) == utc(8, 0))
        #expect(schedule.nextChange(after: utc(8, 0)) == utc(12, 0))
        #expect(schedule.nextChange(after: utc(20, 0)) == utc(8, 0, day: 1))
        #expect(schedule.description == "08:00,512.0 KiB/s 12:00,10.0 MiB/s 19:00,off")
    }

    @Test func aTimetableIsReadInItsTimeZone() throws {
        // 08:00 in Berlin (winter, UTC+1) is 07:00 UTC.
        let schedule = try BandwidthSchedule.parse("08:00,1M 20:00,off", timeZone: TimeZone(identifier: "Europe/Berlin")!)
        #expect(schedule.bytesPerSecond(at: utc(6, 59)) == nil)
        #expect(schedule.bytesPerSecond(at: utc(7, 0)) == 1 << 20)
        #expect(schedule.nextChange(after: utc(6, 0)) == utc(7, 0))
    }

    @Test func constantRatesAndRcloneSpellings() throws {
        #expect(try BandwidthSchedule.parse("10MiB").entries == [.init(minute: 0, bytesPerSecond: 10 << 20)])
        #expect(try BandwidthSchedule.parse("512k").entries == [.init(minute: 0, bytesPerSecond: 512 << 10)])
        #expect(try BandwidthSchedule.parse("off").isOff)
        let single = try BandwidthSchedule.parse("09:30,2M")
        #expect(single.nextChange(after: t0) == nil)
        #expect(single.bytesPerSecond(at: t0) == 2 << 20)
    }

    @Test(arguments: [
        ("08:00,1M 07:00,off", "the times must increase"),
        ("08:00,1M 08:00,2M", "the times must increase"),
        ("25:00,1M", "is not TIME,RATE"),
        ("8am,1M", "is not TIME,RATE"),
        ("08:00,fast", "'fast' is not a rate"),
        ("08:00,0", "must be > 0"),
        ("08:00", "is not a rate"),
        ("", "is empty"),
    ])
    func badTimetablesAreRefused(text: String, message: String) {
        do {
            _ = try BandwidthSchedule.parse(text)
            Issue.record("'\(text)' was accepted")
        } catch let error as ConfigValueError {
            #expect(error.message.contains(message), "'\(text)': \(error.message)")
        } catch {
            Issue.record("'\(text)': \(error)")
        }
    }

    @Test func aBandwidthBucketFollowsTheTimetable() throws {
        let schedule = try BandwidthSchedule.parse("08:00,1KiB 09:00,off", timeZone: TimeZone(identifier: "UTC")!)
        let bucket = TokenBucket(schedule: schedule, burstSeconds: 0.1)
        let start = utc(8, 59).addingTimeInterval(59)  // one second before the limit is lifted
        let ticket = bucket.reserve(Double(1 << 20), at: start)
        // 1 MiB at 1 KiB/s would take 17 minutes: the waiter looks again when the timetable switches, and goes.
        #expect(abs(seconds(bucket.delay(for: ticket, at: start)) - 1) < 1e-5)
        #expect(bucket.delay(for: ticket, at: utc(9, 0)) == nil)
        // From 08:00 the next day, 1 KiB/s again, starting with a full bucket (a tenth of a second's bytes).
        let next = bucket.reserve(1024, at: utc(8, 0, day: 1))
        #expect(abs(seconds(bucket.delay(for: next, at: utc(8, 0, day: 1))) - 0.9) < 1e-5)
    }

    // MARK: - Config

    let registry = PluginRegistry([LocalDestination.registration])

    func parse(_ destinationKeys: String, defaults: String = "{}") throws -> GatewayConfig {
        try GatewayConfig.parse(text: """
            version: 1
            sources: [{name: outbox, path: out, min_age: 30s}]
            defaults: \(defaults)
            destinations:
              - name: archive
                type: local
                path: synced
            \(destinationKeys)
              - name: other
                type: local
                path: other
            """, file: "plugins.yaml", baseDirectory: URL(fileURLWithPath: "/cfg"), registry: registry, environment: [:])
    }

    @Test func limitsAreCoreKeysThatDefaultsSetAndDestinationsOverride() throws {
        let config = try parse("""
                rate: off
                min_interval: 500ms
                bandwidth: "08:00,512KiB 19:00,off"
            """, defaults: "{rate: {requests_per_second: 20, burst: 5}, bandwidth: 10MiB}")
        let archive = try #require(config.destination(named: "archive")).settings
        let other = try #require(config.destination(named: "other")).settings
        #expect(archive.rate == nil)
        #expect(archive.minInterval == .milliseconds(500))
        #expect(archive.bandwidth?.entries.count == 2)
        #expect(other.rate == RateLimit(requestsPerSecond: 20, burst: 5))
        #expect(other.minInterval == .zero)
        #expect(other.bandwidth?.bytesPerSecond(at: t0) == 10 << 20)
        #expect(config.sources[0].minAge == .seconds(30))
        // Every copy of a destination's config shares one set of limits.
        let destination = try #require(config.destination(named: "other"))
        let copy = destination
        #expect(destination.limits === copy.limits)
        #expect(destination.limits.requests != nil && destination.limits.uploadStarts == nil)
    }

    @Test(arguments: [
        ("    rate: {requests_per_second: 0}", "destinations[0].rate.requests_per_second: must be > 0"),
        ("    rate: {requests_per_second: 5, burst: 0}", "destinations[0].rate.burst: must be between 1 and"),
        ("    rate: fast", "destinations[0].rate: expected {requests_per_second: N, burst: M} or off, found 'fast'"),
        ("    rate: {burst: 2}", "destinations[0].rate.requests_per_second: missing required key"),
        ("    rate: {requests_per_second: 5, bursts: 2}", "destinations[0].rate.bursts: unknown key"),
        ("    min_interval: -1s", "destinations[0].min_interval: '-1s' is not a duration"),
        ("    bandwidth: -5", "destinations[0].bandwidth: must be > 0"),
        ("    bandwidth: \"08:00,1M 07:30,off\"", "destinations[0].bandwidth: '07:30,off': the times must increase"),
        ("    bandwidth: \"08:00,1M 19:61,off\"", "destinations[0].bandwidth: '19:61,off' is not TIME,RATE"),
    ])
    func badLimitsAreLocatedErrors(keys: String, expected: String) {
        do {
            _ = try parse(keys)
            Issue.record("accepted: \(keys)")
        } catch let error as ConfigError {
            // plugins.yaml:LINE:COLUMN: key path: message, on the line of the key (the 8th).
            #expect(error.file == "plugins.yaml" && error.line == 8 && error.column != nil, "\(error.description)")
            #expect(error.description.contains(": " + expected), "\(error.description)")
        } catch {
            Issue.record("\(error)")
        }
    }

    @Test func aMinAgeThatIsNoDurationIsALocatedError() {
        do {
            _ = try GatewayConfig.parse(text: """
                version: 1
                sources: [{name: outbox, path: out, min_age: soon}]
                destinations: [{name: a, type: local, path: synced}]
                """, file: "plugins.yaml", baseDirectory: URL(fileURLWithPath: "/cfg"), registry: registry, environment: [:])
            Issue.record("accepted")
        } catch let error as ConfigError {
            #expect(error.line == 2 && error.column != nil, "\(error)")
            #expect(error.description.contains(": sources[0].min_age: 'soon' is not a duration"), "\(error)")
        } catch {
            Issue.record("\(error)")
        }
    }

    // MARK: - The delivery layer, with the real local destination

    let dir: TemporaryDirectory

    init() throws {
        dir = try TemporaryDirectory("sg-limits")
    }

    func items(_ count: Int, bytes: Int) throws -> [UploadItem] {
        try (0..<count).map { index in
            let path = "f\(index).bin"
            let url = try dir.write("src/\(path)", Data((0..<bytes).map { UInt8(($0 + index) % 251) }))
            let stat = try #require(FileStat.of(url.path))
            return UploadItem(source: "s", relativePath: path, absolutePath: url.path, remoteName: path, size: stat.size,
                              modificationTime: stat.modificationTime, sha256: "", isArtwork: false)
        }
    }

    func settings(concurrency: Int, timeout: Duration = .seconds(600), rate: RateLimit? = nil, minInterval: Duration = .zero,
                  bandwidth: BandwidthSchedule? = nil) -> DeliverySettings {
        var settings = DeliverySettings(concurrency: concurrency, retry: .builtIn, recentCompleted: .seconds(10), recentFailed: .seconds(60),
                                        attemptTimeout: timeout)
        settings.rate = rate
        settings.minInterval = minInterval
        settings.bandwidth = bandwidth
        return settings
    }

    func startTimes(_ log: EventLog) -> [Date] {
        log.events.compactMap { event -> Date? in
            if case .started = event.kind { return event.time }
            return nil
        }.sorted()
    }

    /// One upload at a time: on a virtual clock, concurrent sleepers would move one shared time on together. That
    /// starts reserved at the same moment (concurrent uploads) get spaced slots is the bucket's own test above.
    @Test func minIntervalSpacesTheStartsOfUploads() async throws {
        defer { dir.remove() }
        let clock = VirtualClock(start: t0)
        let log = EventLog()
        let layer = DeliveryLayer(destinationName: "d", destination: LocalDestination(root: dir.file("dst").path),
                                  settings: settings(concurrency: 1, minInterval: .milliseconds(500)), clock: clock, onEvent: { log.append($0) })
        let failures = await layer.uploadMany(try items(6, bytes: 100))
        #expect(failures.isEmpty)
        let starts = startTimes(log)
        #expect(starts.count == 6)
        for (a, b) in zip(starts, starts.dropFirst()) {
            #expect(abs(b.timeIntervalSince(a) - 0.5) < 1e-3, "two starts \(b.timeIntervalSince(a)) s apart")
        }
        #expect(layer.limits.uploadStarts?.waitCount == 5)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.file("dst").path).count == 6)
    }

    @Test func concurrentReservationsAreSpacedLikeSequentialOnes() async throws {
        let limits = DeliveryLimits(rate: nil, minInterval: .milliseconds(100), bandwidth: nil)
        let bucket = try #require(limits.uploadStarts)
        // Eight uploads asking at the same moment from eight tasks get eight slots 100 ms apart.
        let start = t0
        let tickets = await withTaskGroup(of: Double.self) { group in
            for _ in 0..<8 { group.addTask { bucket.reserve(1, at: start) } }
            return await group.reduce(into: [Double]()) { $0.append($1) }
        }
        let waits = tickets.map { seconds(bucket.delay(for: $0, at: t0)) }.sorted()
        for (index, wait) in waits.enumerated() {
            #expect(abs(wait - Double(index) * 0.1) < 1e-5, "slot \(index): \(wait) s")
        }
    }

    @Test func rateHoldsUploadStartsToItsBucket() async throws {
        defer { dir.remove() }
        let clock = VirtualClock(start: t0)
        let log = EventLog()
        let layer = DeliveryLayer(destinationName: "d", destination: LocalDestination(root: dir.file("dst").path),
                                  settings: settings(concurrency: 1, rate: RateLimit(requestsPerSecond: 10, burst: 3)), clock: clock,
                                  onEvent: { log.append($0) })
        let failures = await layer.uploadMany(try items(13, bytes: 100))
        #expect(failures.isEmpty)
        // Three at once, then ten more at 10 a second: the last starts a second after the first.
        let starts = startTimes(log)
        #expect(starts.count == 13)
        #expect(layer.limits.requests?.waitCount == 10)
        #expect(abs(starts[12].timeIntervalSince(starts[0]) - 1.0) < 1e-3, "\(starts[12].timeIntervalSince(starts[0]))")
    }

    @Test func bandwidthPacesTheBytesTheLocalDestinationReads() async throws {
        defer { dir.remove() }
        let clock = VirtualClock(start: t0)
        let layer = DeliveryLayer(destinationName: "d", destination: LocalDestination(root: dir.file("dst").path),
                                  settings: settings(concurrency: 2, bandwidth: .constant(1 << 20)), clock: clock)
        // 4 files of 1.5 MiB through 1 MiB/s: 6 MiB, less the tenth of a second's bytes saved, takes 5.9 s.
        let files = try items(4, bytes: 3 << 19)
        let failures = await layer.uploadMany(files)
        #expect(failures.isEmpty)
        let elapsed = clock.now().timeIntervalSince(t0)
        #expect(elapsed >= 5.9 - 1e-3, "6 MiB at 1 MiB/s in \(elapsed) s of the virtual clock")
        #expect((layer.limits.bandwidth?.waitCount ?? 0) >= 6)
        for file in files {
            #expect(try dir.read("dst/\(file.remoteName)") == (try dir.read("src/\(file.relativePath)")))
        }
    }

    /// Real time, bounded: an attempt that is only being paced is not cut by `attempt_timeout` (its waits do not
    /// count). 64 KiB through 16 KiB/s waits about 3.9 s in one read, twice the 2 s timeout; the rest of the attempt
    /// (a small copy) has the 2 s, on a machine busy with other tests. No assertion on how long anything took.
    @Test func waitingForTheBandwidthLimitIsNotAnAttemptTimeout() async throws {
        defer { dir.remove() }
        let log = EventLog()
        let layer = DeliveryLayer(destinationName: "d", destination: LocalDestination(root: dir.file("dst").path),
                                  settings: settings(concurrency: 1, timeout: .seconds(2), bandwidth: .constant(16 << 10)),
                                  onEvent: { log.append($0) })
        let file = try #require(try items(1, bytes: 64 << 10).first)
        let result = await layer.deliver(file)
        guard case .success = result else {
            Issue.record("a paced upload failed: \(result)")
            return
        }
        #expect(log.events.filter { if case .started = $0.kind { true } else { false } }.count == 1,
                "\(log.events.map { "\($0.time.timeIntervalSince1970) \($0.kind)" })")
        #expect((layer.limits.bandwidth?.waitCount ?? 0) >= 1)
        #expect(try dir.read("dst/\(file.remoteName)") == (try dir.read("src/\(file.relativePath)")))
    }
}
