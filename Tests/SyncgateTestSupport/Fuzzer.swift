import Foundation

/// A seeded mutation fuzzer for the parsers that take outside bytes. Each round takes a seed input, mutates it
/// (bit flips, byte changes, inserts, deletes, duplicated or truncated runs, splices of two seeds) or makes random
/// bytes, and hands it to the target, which must return or throw, never crash or hang. The seed of a run is
/// `SYNCGATE_FUZZ_SEED` (default: fixed, so CI is repeatable) and the number of rounds `SYNCGATE_FUZZ_ROUNDS`
/// (default per target); a crash prints nothing useful by itself, so the current input is written to
/// `$TMPDIR/syncgate-fuzz-<target>-<pid>.bin` before each round: keep it as a regression seed.
public struct Fuzzer {
    public let name: String
    public let seeds: [[UInt8]]
    public let rounds: Int
    private var state: UInt64

    /// Executions per target in this process (for the README's figures).
    nonisolated(unsafe) public static var executions: [String: Int] = [:]

    public init(_ name: String, seeds: [[UInt8]], rounds defaultRounds: Int) {
        self.name = name
        self.seeds = seeds.isEmpty ? [[]] : seeds
        let env = ProcessInfo.processInfo.environment
        self.rounds = Int(env["SYNCGATE_FUZZ_ROUNDS"] ?? "") ?? defaultRounds
        let seed = UInt64(env["SYNCGATE_FUZZ_SEED"] ?? "") ?? 0x5EED_5A11_CA7E_0001
        var hash: UInt64 = 1469598103934665603
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 1099511628211 }
        self.state = seed ^ hash
    }

    private mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private mutating func below(_ n: Int) -> Int { n <= 0 ? 0 : Int(next() % UInt64(n)) }

    /// One mutated input.
    public mutating func input() -> [UInt8] {
        var bytes = seeds[below(seeds.count)]
        if below(10) == 0 { return (0..<below(256)).map { _ in UInt8(truncatingIfNeeded: next()) } }
        let steps = 1 + below(6)
        for _ in 0..<steps {
            switch below(8) {
            case 0 where !bytes.isEmpty:
                let i = below(bytes.count)
                bytes[i] ^= UInt8(1 << below(8))
            case 1 where !bytes.isEmpty:
                bytes[below(bytes.count)] = [0, 0xFF, 0x7F, 0x80, 0x22, 0x2C, 0x0A, 0x3C, 0x7B, 0x5B][below(10)]
            case 2:
                bytes.insert(UInt8(truncatingIfNeeded: next()), at: below(bytes.count + 1))
            case 3 where !bytes.isEmpty:
                bytes.remove(at: below(bytes.count))
            case 4 where !bytes.isEmpty:
                let start = below(bytes.count)
                let end = min(bytes.count, start + 1 + below(16))
                bytes.insert(contentsOf: bytes[start..<end], at: below(bytes.count + 1))
            case 5 where !bytes.isEmpty:
                bytes.removeSubrange(below(bytes.count)...)
            case 6:
                let other = seeds[below(seeds.count)]
                if !other.isEmpty { bytes += other[below(other.count)...] }
            default:
                if bytes.count >= 4 {
                    let i = below(bytes.count - 3)
                    let value = [UInt32.max, 0x7FFF_FFFF, 0, 0x8000_0000][below(4)]
                    for k in 0..<4 { bytes[i + k] = UInt8(truncatingIfNeeded: value >> (8 * k)) }
                }
            }
        }
        return bytes
    }

    /// Runs the target over `rounds` inputs; returns the number of executions.
    @discardableResult
    public mutating func run(_ target: ([UInt8]) -> Void) -> Int {
        let crashFile = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("syncgate-fuzz-\(name)-\(getpid()).bin").path
        // One open file, rewritten in place before each round (no flush: a crash of this process leaves the
        // page cache, and so the input, intact). Data.write would create and fsync a file per round.
        let fd = open(crashFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        defer {
            if fd >= 0 { close(fd) }
            unlink(crashFile)
        }
        for seed in seeds { target(seed) }
        for _ in 0..<rounds {
            let bytes = input()
            if fd >= 0 {
                _ = ftruncate(fd, 0)
                _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
            }
            target(bytes)
        }
        Fuzzer.executions[name, default: 0] += rounds + seeds.count
        return rounds + seeds.count
    }
}
