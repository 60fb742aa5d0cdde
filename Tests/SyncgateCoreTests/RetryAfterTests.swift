import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

@Suite("Retry-After")
struct RetryAfterTests {
    let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT

    @Test func secondsAndDates() {
        #expect(RetryAfter.parse("120", now: now) == .seconds(120))
        #expect(RetryAfter.parse(" 0 ", now: now) == .zero)
        #expect(RetryAfter.parse("99999999999999999999999", now: now) == RetryAfter.longest)
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:50:07 GMT", now: now) == .seconds(30))
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:00:00 GMT", now: now) == .zero)
        #expect(RetryAfter.parse("Mon, 07 Nov 1994 08:49:37 GMT", now: now) == RetryAfter.longest)
        #expect(RetryAfter.parse("-5", now: now) == nil)
        #expect(RetryAfter.parse("soon", now: now) == nil)
        #expect(RetryAfter.parse("Sun, 31 Feb 1994 08:00:00 GMT", now: now) == nil)
    }

    /// `Wed, ` followed by U+0740 made Foundation's DateFormatter trap; it must simply be refused.
    @Test func formerCrashersAndFuzzedValues() {
        #expect(RetryAfter.parse("Wed, \u{0740}", now: now) == nil)
        var fuzzer = Fuzzer("retry-after", seeds: ["120", "Sun, 06 Nov 1994 08:49:37 GMT", "Wed, \u{0740}"].map { Array($0.utf8) }, rounds: 20_000)
        fuzzer.run { bytes in _ = RetryAfter.parse(String(decoding: bytes, as: UTF8.self), now: now) }
    }
}
