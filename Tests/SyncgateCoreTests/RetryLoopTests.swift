import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// The one retry loop (`DeliveryLayer.withRetries`) as single deletes and cancellation meet it.
@Suite("retry loop: single deletes, cancellation during a backoff")
struct RetryLoopTests {
    let dir: TemporaryDirectory

    init() throws { dir = try TemporaryDirectory("sg-retry-loop") }

    func settings(file: Int, baseDelay: Duration = .seconds(1)) -> DeliverySettings {
        DeliverySettings(
            concurrency: 2,
            retry: RetrySettings(file: file, artwork: file, baseDelay: baseDelay, maxDelay: max(baseDelay, .seconds(8)), jitter: .none,
                                 maxRetryInterval: .seconds(3600), giveUpAfter: .seconds(86400)),
            recentCompleted: .seconds(10), recentFailed: .seconds(60), attemptTimeout: .seconds(600))
    }

    func item(_ path: String) throws -> UploadItem {
        let url = try dir.write(path, Data("contents of \(path)".utf8))
        let stat = try #require(FileStat.of(url.path))
        return UploadItem(source: "s", relativePath: path, absolutePath: url.path, remoteName: path, size: stat.size,
                          modificationTime: stat.modificationTime, sha256: "x", isArtwork: false)
    }

    @Test func aSingleDeleteThatFailsRetryablyOnceIsRetriedAndSucceeds() async throws {
        defer { dir.remove() }
        let destination = FlakyDestination()
        let clock = VirtualClock()
        let layer = DeliveryLayer(destinationName: "d", destination: destination, settings: settings(file: 1), clock: clock)
        _ = try await layer.deliver(try item("gone.txt")).get()
        destination.deleteFailures = 1
        let failures = await layer.deleteMany(["gone.txt"])
        #expect(failures.isEmpty, "\(failures)")
        #expect(destination.deletes == ["gone.txt", "gone.txt"])
        #expect(clock.sleeps == [.seconds(1)])
        #expect(destination.storedNames.isEmpty)
    }

    @Test func aSingleDeleteRefusedForGoodIsNotRetriedAndNothingElseIsDeleted() async throws {
        defer { dir.remove() }
        let destination = FlakyDestination()
        let clock = VirtualClock()
        let layer = DeliveryLayer(destinationName: "d", destination: destination, settings: settings(file: 3), clock: clock)
        _ = try await layer.deliver(try item("locked.txt")).get()
        _ = try await layer.deliver(try item("other.txt")).get()
        destination.refusedDeletes = ["locked.txt"]
        let failures = await layer.deleteMany(["locked.txt"])
        #expect(failures["locked.txt"]?.failureClass == .permanent)
        #expect(failures["locked.txt"]?.code == "AccessDenied")
        #expect(failures["locked.txt"]?.attempts == 1)
        #expect(destination.deletes == ["locked.txt"], "one attempt, no retry")
        #expect(clock.sleeps.isEmpty)
        #expect(destination.storedNames == ["locked.txt", "other.txt"])
    }

    /// A file waiting out a backoff whose sleep only ends when it is cancelled (a day long): cancelling the transfer
    /// ends the wait, and nothing more is attempted. Were the cancellation not to reach the wait, the test would hang
    /// until its time limit (no wall-clock bound: a full run's load can hold a test's task for many seconds).
    @Test(.timeLimit(.minutes(30)), arguments: [false, true])
    func cancellingDuringABackoffWaitEndsIt(cancelTheTask: Bool) async throws {
        defer { dir.remove() }
        let destination = FlakyDestination(transientFailures: 5)
        let layer = DeliveryLayer(destinationName: "d", destination: destination, settings: settings(file: 3, baseDelay: .seconds(60)),
                                  clock: DayLongSleeps())
        let upload = try item("slow.txt")
        let handle = CancellationHandle()
        let started = ContinuousClock.now
        let delivery = Task { await layer.deliver(upload, cancellation: handle) }
        // The first attempt fails at once; then it waits out its backoff.
        while destination.attemptCount("slow.txt") < 1 { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(200))
        if cancelTheTask { delivery.cancel() } else { handle.cancel() }
        let result = await delivery.value
        let elapsed = ContinuousClock.now - started
        guard case .failure(let failure) = result else {
            Issue.record("expected the delivery to end cancelled")
            return
        }
        #expect(failure.isCancellation)
        #expect(destination.attemptCount("slow.txt") == 1)
        print("cancelled during a backoff (\(cancelTheTask ? "the task" : "the handle")): ended \(elapsed) after the start")
    }
}

/// A clock whose sleeps last a day unless cancelled; its time is the system's.
struct DayLongSleeps: SyncClock {
    func now() -> Date { Date() }
    func sleep(for duration: Duration) async throws { try await Task.sleep(for: .seconds(86_400)) }
}
