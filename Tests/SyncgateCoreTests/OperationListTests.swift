import Foundation
import SyncgateCore
import Testing

@Suite("operation lists")
struct OperationListTests {
    func event(_ path: String, _ kind: DeliveryEvent.Kind, at time: Date, destination: String = "car") -> DeliveryEvent {
        DeliveryEvent(file: FileKey(source: "s", path: path), destination: destination, size: 100, kind: kind, time: time)
    }

    @Test func ongoingCompletedFailedExpireAndArePublished() async throws {
        let clock = VirtualClock()
        let list = OperationList(clock: clock, keepCompleted: { _ in .seconds(10) }, keepFailed: { _ in .seconds(60) })
        let stream = list.changes()
        let t = clock.now()
        list.apply(event("a", .started(attempt: 1), at: t))
        list.apply(event("b", .started(attempt: 1), at: t))
        list.apply(event("a", .progress(bytes: 40), at: t))
        var snap = list.snapshot()
        #expect(snap.ongoing.count == 2)
        #expect(snap.ongoing.first { $0.file.path == "a" }?.progress == 0.4)
        list.apply(event("a", .synced(receipt: Receipt(remoteName: "a"), attempts: 1, uploaded: true), at: t))
        list.apply(event("b", .failed(DeliveryFailure(message: "boom", failureClass: .permanent, attempts: 1)), at: t))
        snap = list.snapshot()
        #expect(snap.ongoing.isEmpty)
        #expect(snap.recentlyCompleted.map(\.file.path) == ["a"])
        #expect(snap.recentlyFailed.map(\.error) == ["boom"])
        clock.advance(by: 11)
        snap = list.snapshot()
        #expect(snap.recentlyCompleted.isEmpty)
        #expect(snap.recentlyFailed.count == 1)
        clock.advance(by: 50)
        #expect(list.snapshot().recentlyFailed.isEmpty)
        list.close()
        var names: [String] = []
        for await e in stream { names.append(e.name) }
        #expect(names == ["started", "started", "progress", "synced", "failed"])
    }

    @Test func aBurstKeepsOnlyTheNewestWithinTheLimit() {
        let clock = VirtualClock()
        let list = OperationList(clock: clock, keepCompleted: { _ in .seconds(3600) }, keepFailed: { _ in .seconds(3600) })
        let total = 2 * OperationList.recentLimit + 500
        for index in 0..<total {
            let t = clock.now()
            list.apply(event("c\(index)", .started(attempt: 1), at: t))
            list.apply(event("c\(index)", .synced(receipt: Receipt(remoteName: "c\(index)"), attempts: 1, uploaded: true), at: t))
            list.apply(event("f\(index)", .failed(DeliveryFailure(message: "boom", failureClass: .permanent, attempts: 1)), at: t))
        }
        let snap = list.snapshot()
        #expect(snap.recentlyCompleted.map(\.file.path) == (total - OperationList.recentLimit..<total).map { "c\($0)" })
        #expect(snap.recentlyFailed.count == OperationList.recentLimit)
        #expect(snap.recentlyFailed.last?.file.path == "f\(total - 1)")
        #expect(snap.ongoing.isEmpty)
    }

    /// A file that failed and then was delivered (a Retry on the page) is no longer a recent failure; the same
    /// file at another destination, and other files, still are.
    @Test func aDeliveredFileLeavesTheRecentlyFailedList() {
        let clock = VirtualClock()
        let list = OperationList(clock: clock)
        let t = clock.now()
        let boom = DeliveryFailure(message: "boom", failureClass: .permanent, attempts: 1)
        list.apply(event("a", .failed(boom), at: t))
        list.apply(event("a", .failed(boom), at: t, destination: "bucket"))
        list.apply(event("b", .failed(boom), at: t))
        clock.advance(by: 5)
        list.apply(event("a", .started(attempt: 1), at: clock.now()))
        #expect(list.snapshot().recentlyFailed.count == 3, "a retry in flight has not delivered it yet")
        list.apply(event("a", .synced(receipt: Receipt(remoteName: "a"), attempts: 1, uploaded: true), at: clock.now()))
        let snap = list.snapshot()
        #expect(snap.recentlyFailed.map { "\($0.destination):\($0.file.path)" }.sorted() == ["bucket:a", "car:b"])
        #expect(snap.recentlyCompleted.map(\.file.path) == ["a"])
    }
}
