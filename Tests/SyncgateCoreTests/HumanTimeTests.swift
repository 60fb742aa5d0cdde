import Foundation
import SyncgateCore
import Testing

/// The times people read: the progress line's ETA in hours, minutes and seconds, and `ls -l`'s UTC time.
@Suite("human times")
struct HumanTimeTests {
    @Test func remainingTimeInTheLargestTwoUnits() {
        #expect(HumanTime.remaining(0) == "0s")
        #expect(HumanTime.remaining(41.6) == "42s")
        #expect(HumanTime.remaining(59.4) == "59s")
        #expect(HumanTime.remaining(60) == "1m00s")
        #expect(HumanTime.remaining(185) == "3m05s")
        #expect(HumanTime.remaining(3599) == "59m59s")
        #expect(HumanTime.remaining(3600) == "1h00m")
        #expect(HumanTime.remaining(3725) == "1h02m")
        #expect(HumanTime.remaining(93_600) == "26h00m")
        #expect(HumanTime.remaining(-5) == "0s")
    }

    @Test func utcToTheSecond() {
        // 2026-11-28 09:15:02.750 UTC, whatever the machine's time zone.
        #expect(HumanTime.utc(Date(timeIntervalSince1970: 1_795_857_302.75)) == "2026-11-28 09:15:02")
        #expect(HumanTime.utc(Date(timeIntervalSince1970: 0)) == "1970-01-01 00:00:00")
    }
}
