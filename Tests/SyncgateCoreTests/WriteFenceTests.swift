import Synchronization
import SyncgateCore
import Testing

/// The write fence is asked before every put and delete of a destination that has one (an exec plugin, a sheet): its
/// check must cost the same on the 20,000th call as on the first.
@Suite("write fence")
struct WriteFenceTests {
    struct Refused: Error {}

    /// A check stored as a bare closure in a `Mutex` was wrapped in two more reabstraction thunks each time it was
    /// read, so that each call ran through all the wrappers of the calls before it (quadratic: a sync of 20,000 files
    /// through an exec plugin spent most of its CPU there). Seen without a clock: the check's own frame sits deeper in
    /// the stack on a later call made from the same place, by at least 16 bytes per wrapper.
    @Test func aCheckIsAsDeepOnTheLastCallAsOnTheFirst() throws {
        let fence = WriteFence()
        let calls = 20_000
        let box = DepthBox()
        fence.use {
            var marker = 0
            let depth = withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
            box.depths.withLock { $0.append(depth) }
            return nil
        }
        for _ in 0..<calls { try fence.verify() }
        let depths = box.depths.withLock { $0 }
        #expect(depths.count == calls, "the check ran once per verify")
        let first = try #require(depths.first), last = try #require(depths.last)
        let deeper = first >= last ? first - last : 0
        #expect(deeper < 4096, "the check ran \(deeper) bytes deeper in the stack on call \(calls) than on call 1")
    }

    @Test func aRefusalIsThrownAndANewCheckReplacesTheOld() throws {
        let fence = WriteFence()
        try fence.verify()  // no check yet: nothing refused
        fence.use { Refused() }
        #expect(throws: Refused.self) { try fence.verify() }
        fence.use { nil }
        try fence.verify()
    }

    /// Where the check writes what it saw.
    final class DepthBox: Sendable {
        let depths = Mutex<[UInt]>([])
    }
}
