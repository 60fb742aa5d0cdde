import SyncgateCore
import Testing

@Suite("exponential backoff with jitter (RetryPolicy)")
struct BackoffTests {
    let settings = RetrySettings(file: 5, artwork: 2, baseDelay: .seconds(1), maxDelay: .seconds(20), jitter: .full,
                                 maxRetryInterval: .seconds(3600), giveUpAfter: .seconds(86400))

    @Test func boundDoublesUpToTheCap() {
        let b = RetryPolicy(settings: settings)
        #expect(b.bound(forRetry: 1) == .seconds(1))
        #expect(b.bound(forRetry: 2) == .seconds(2))
        #expect(b.bound(forRetry: 3) == .seconds(4))
        #expect(b.bound(forRetry: 5) == .seconds(16))
        #expect(b.bound(forRetry: 6) == .seconds(20))
        #expect(b.bound(forRetry: 500) == .seconds(20))
    }

    @Test func fullJitterStaysBetweenBaseAndBound() {
        let low = RetryPolicy(settings: settings) { $0.lowerBound }
        let high = RetryPolicy(settings: settings) { $0.upperBound }
        for n in 1...10 {
            #expect(low.delay(forRetry: n) == .seconds(1))
            #expect(high.delay(forRetry: n) == low.bound(forRetry: n))
        }
        let real = RetryPolicy(settings: settings)
        for n in 1...10 {
            for _ in 0..<50 {
                let d = real.delay(forRetry: n)
                #expect(d >= .seconds(1) && d <= .seconds(20) && d <= real.bound(forRetry: n))
            }
        }
    }

    @Test func noJitterIsExactAndEqualJitterIsTheUpperHalf() {
        var s = settings
        s.jitter = .none
        #expect(RetryPolicy(settings: s).delay(forRetry: 3) == .seconds(4))
        s.jitter = .equal
        #expect(RetryPolicy(settings: s) { $0.lowerBound }.delay(forRetry: 3) == .seconds(2))
        #expect(RetryPolicy(settings: s) { $0.upperBound }.delay(forRetry: 3) == .seconds(4))
    }

    @Test func retryAfterIsTheLeastWait() {
        let b = RetryPolicy(settings: settings) { $0.lowerBound }
        #expect(b.delay(forRetry: 1, retryAfter: .seconds(7)) == .seconds(7))
        #expect(b.delay(forRetry: 1, retryAfter: .milliseconds(10)) == .seconds(1))
    }

    @Test func retryCountsDependOnKind() {
        #expect(settings.retries(isArtwork: true) == 2)
        #expect(settings.retries(isArtwork: false) == 5)
    }
}
