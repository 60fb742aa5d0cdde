import Foundation
import SyncgateCore
import Testing

@Suite("byte sizes as text")
struct ByteSizeFormatTests {
    @Test("one decimal and the unit, as printf's %.1f gives it, ties included")
    func formatAgreesWithPrintf() {
        var sizes: [Int64] = [0, 1, 1023, 1024, 1025, 1280, 1331, 1332, 4096, 10_188, 10_189, 1_048_575, 1_048_576,
                              52_428_800, 1_073_741_823, 1_073_741_824, 1_099_511_627_776, 5_000_000_000_000_000]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 { sizes.append(Int64.random(in: 0...(1 << 52), using: &generator)) }
        for exponent in 0..<50 { sizes.append(Int64(1) << exponent + Int64(1) << max(0, exponent - 4)) }
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        for bytes in sizes {
            var value = Double(bytes)
            var index = 0
            while value >= 1024, index < units.count - 1 {
                value /= 1024
                index += 1
            }
            let printf = index == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[index])
            #expect(ByteSize.format(bytes) == printf, "\(bytes)")
        }
        #expect(ByteSize.format(4096) == "4.0 KiB")
        #expect(ByteSize.format(52_428_800) == "50.0 MiB")
    }
}
