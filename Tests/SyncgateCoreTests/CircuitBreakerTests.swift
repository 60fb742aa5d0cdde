import Foundation
import Synchronization
import SyncgateCore
import SyncgateTestSupport
import Testing

/// The breaker's judgement at its edges: a failure rate opens it, a streak never does; it is half-open after a
/// cool-down, one trial at a time; it gives up only after `unavailable_wait`.
@Suite("circuit breaker: flaky is not absent")
struct CircuitBreakerTests {
    let failure = DeliveryFailure(message: "HTTP 500 InternalError", failureClass: .retryable(), code: "InternalError", attempts: 1)

    @Test func aStreakOfFailuresDoesNotOpenIt() {
        let breaker = CircuitBreaker(clock: VirtualClock())
        // Nine failures in a row over nine files: fewer attempts than a rate is judged on.
        for i in 0..<9 { #expect(!breaker.failed(subject: "f\(i)", failure)) }
        #expect(!breaker.isFailing && !breaker.isOpen)
        // The tenth opens it: ten of ten failed, over ten files.
        #expect(breaker.failed(subject: "f9", failure))
        #expect(breaker.isFailing)
        #expect(!breaker.isOpen, "failing is not out for the run: it is half-open after a cool-down")
    }

    @Test func failuresOfFewerThanFiveFilesAreTheFilesNotTheDestinations() {
        let breaker = CircuitBreaker(clock: VirtualClock())
        for i in 0..<20 { #expect(!breaker.failed(subject: "f\(i % 4)", failure)) }
        #expect(!breaker.isFailing)
        #expect(breaker.failed(subject: "f4", failure), "a fifth file makes it the destination's")
    }

    @Test func theRateIsJudgedOverTheLastTwentyAttempts() {
        // 15 of 20 failed (75%): below the rate.
        let below = CircuitBreaker(clock: VirtualClock())
        for i in 0..<5 { below.succeeded(subject: "ok\(i)") }
        for i in 0..<15 { #expect(!below.failed(subject: "f\(i)", failure)) }
        #expect(!below.isFailing)
        // 16 of the last 20 (80%): at the rate.
        let at = CircuitBreaker(clock: VirtualClock())
        for i in 0..<4 { at.succeeded(subject: "ok\(i)") }
        for i in 0..<15 { #expect(!at.failed(subject: "f\(i)", failure)) }
        #expect(at.failed(subject: "f15", failure))
        // Successes long ago fall out of the window.
        let old = CircuitBreaker(clock: VirtualClock())
        for i in 0..<100 { old.succeeded(subject: "ok\(i)") }
        for i in 0..<15 { #expect(!old.failed(subject: "f\(i)", failure)) }
        #expect(old.failed(subject: "f15", failure), "16 of the last 20 failed, whatever came before")
    }

    @Test(arguments: [0.1, 0.3])
    func randomErrorsBelowTheRateNeverOpenIt(fraction: Double) {
        // 20,000 attempts at a fixed seed: never 16 failures among 20 in a row.
        var generator = SplitMix(seed: 7)
        let breaker = CircuitBreaker(clock: VirtualClock())
        var opened = 0
        for i in 0..<20_000 {
            if Double(generator.next() % 1_000_000) / 1_000_000 < fraction {
                if breaker.failed(subject: "f\(i)", failure) { opened += 1 }
            } else {
                breaker.succeeded(subject: "f\(i)")
            }
        }
        #expect(opened == 0)
    }

    @Test func halfOpenAfterTheCoolDownOneTrialAtATimeAndASuccessClosesIt() async {
        let clock = VirtualClock()
        let breaker = CircuitBreaker(waitLimit: .seconds(30), clock: clock)
        for i in 0..<10 { breaker.failed(subject: "f\(i)", failure) }
        let start = clock.now()
        #expect(await breaker.admit(isCancelled: { false }) == .trial)
        #expect(clock.now().timeIntervalSince(start) >= CircuitBreaker.firstCoolDown.seconds, "the trial waits for the cool-down")
        #expect(breaker.trials == 1)
        // While the trial runs, nobody else goes: a second caller waits until it ends.
        let waiter = Task { await breaker.admit(isCancelled: { false }) }
        try? await Task.sleep(for: .milliseconds(50))
        breaker.succeeded(subject: "f0", trial: true)
        #expect(await waiter.value == .go)
        #expect(!breaker.isFailing && !breaker.isOpen)
        #expect(await breaker.admit(isCancelled: { false }) == .go)
    }

    @Test func aFailedTrialDoublesTheCoolDownAndARetryAfterIsTheLeast() async {
        let clock = VirtualClock()
        let breaker = CircuitBreaker(waitLimit: .seconds(300), clock: clock)
        for i in 0..<10 { breaker.failed(subject: "f\(i)", failure) }
        #expect(await breaker.admit(isCancelled: { false }) == .trial)
        var before = clock.now()
        breaker.failed(subject: "f0", failure, trial: true)
        #expect(await breaker.admit(isCancelled: { false }) == .trial)
        #expect(clock.now().timeIntervalSince(before) >= 2, "second cool-down: 2 s")
        before = clock.now()
        var asked = failure
        asked.failureClass = .retryable(after: .seconds(9))
        breaker.failed(subject: "f0", asked, trial: true)
        #expect(await breaker.admit(isCancelled: { false }) == .trial)
        #expect(clock.now().timeIntervalSince(before) >= 9, "the server's Retry-After is waited for")
    }

    @Test func itGivesUpAfterUnavailableWaitAndIsThenOutForTheRun() async {
        let clock = VirtualClock()
        let breaker = CircuitBreaker(waitLimit: .seconds(30), clock: clock)
        let tripped = Mutexed(false)
        breaker.onTrip { tripped.set(true) }
        for i in 0..<10 { breaker.failed(subject: "f\(i)", failure) }
        var trials = 0
        while true {
            let admission = await breaker.admit(isCancelled: { false })
            guard admission == .trial else {
                guard case .stop(let final) = admission else {
                    Issue.record("expected stop, got \(admission)")
                    return
                }
                #expect(final.scope == .destination)
                #expect(final.message.contains("unavailable_wait (30s)"), "\(final.message)")
                #expect(final.message.contains("of the last"), "\(final.message)")
                break
            }
            trials += 1
            breaker.failed(subject: "f0", failure, trial: true)
        }
        // 1 + 2 + 4 + 8 + 8 + 8 s of cool-downs: the trials after 1, 3, 7, 15, 23 s; past 30 s it gives up.
        #expect(trials == 5)
        #expect(breaker.isOpen)
        #expect(tripped.value)
        #expect(await breaker.admit(isCancelled: { false }) == .stop(breaker.failure!))
    }

    @Test func anAbsentDestinationOpensItForTheRunAtOnce() async {
        let breaker = CircuitBreaker(clock: VirtualClock())
        let absent = DeliveryFailure(message: "connection refused", failureClass: .retryable(), scope: .destination, attempts: 1)
        breaker.trip(absent)
        #expect(breaker.isOpen)
        #expect(await breaker.admit(isCancelled: { false }) == .stop(breaker.failure!))
        #expect(breaker.failure?.message == "connection refused")
    }

    @Test func aTrialThatTheDestinationAnswersForTheFilesOwnReasonClosesIt() async {
        let breaker = CircuitBreaker(clock: VirtualClock())
        for i in 0..<10 { breaker.failed(subject: "f\(i)", failure) }
        #expect(await breaker.admit(isCancelled: { false }) == .trial)
        breaker.ended(trial: true, answered: true)  // e.g. 400 for that one file: the server works
        #expect(!breaker.isFailing)
    }
}

/// A value set from one task and read from another.
final class Mutexed<Value: Sendable>: Sendable {
    private let stored: Mutex<Value>
    init(_ value: Value) { stored = Mutex(value) }
    func set(_ value: Value) { stored.withLock { $0 = value } }
    var value: Value { stored.withLock { $0 } }
}
