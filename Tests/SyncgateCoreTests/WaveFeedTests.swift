import Foundation
@testable import SyncgateCore
import SyncgateLocal
import SyncgateTestSupport
import Testing

/// A walk split between a fleet's instances hands its waves over through a ``WaveFeed`` that looks at the fleet's
/// view again when a destination takes a wave (``FleetShare``): an instance that started a moment before the others
/// planned its first waves with a view of itself alone, and what the view now gives another instance is that
/// instance's to plan, not this one's to claim.
@Suite("waves of a split walk")
struct WaveFeedTests {
    static let me = "host:11:aa"
    static let other = "host:12:bb"

    func wave(_ keys: [FileKey]) throws -> DestinationPlanner.Outcome {
        let config = try GatewayConfig.parse(text: """
            version: 1
            sources: [{name: outbox, path: /tmp/outbox}, {name: whole, path: /tmp/whole}]
            destinations: [{name: archive, type: local, path: /tmp/archive}]
            """, file: "plugins.yaml", baseDirectory: URL(fileURLWithPath: "/tmp"), registry: PluginRegistry([LocalDestination.registration]))
        let plans = keys.map { key in
            PlannedDelivery(file: ScannedFile(source: key.source, root: "/tmp/" + key.source, relativePath: key.path, size: 1, modificationTime: Date()),
                            destination: "archive", action: .upload(.new), sha256: nil, isArtwork: false, entry: nil, remoteName: nil)
        }
        return DestinationPlanner.Outcome(destination: config.destinations[0], plans: plans, upToDate: 0, stillFailedRetryable: 0,
                                          stillFailedPermanently: 0, touched: [])
    }

    let split = (0..<60).map { FileKey(source: "outbox", path: "d\($0 % 4)/f\($0).bin") }
    let whole = (0..<10).map { FileKey(source: "whole", path: "f\($0).bin") }

    @Test func plansTheViewNowGivesAnotherInstanceAreDroppedWhenTheWaveIsTaken() async throws {
        let share = FleetShare(FleetView(members: [Self.me], me: Self.me))
        let feed = WaveFeed(destinations: 1, share: share, splitSources: ["outbox"])
        // Planned alone: every file is this instance's.
        #expect(feed.send(try wave(split + whole), to: 0))
        feed.finish()
        let both = FleetView(members: [Self.me, Self.other], me: Self.me)
        let mine = split.filter { both.owns(source: $0.source, path: $0.path) }
        #expect(!mine.isEmpty && mine.count < split.count, "both instances own some of the files")
        // The other instance joins before the wave is taken.
        share.update(both)
        let taken = try #require(await feed.nextWave(0))
        #expect(taken.plans.map(\.file.key) == mine + whole, "this share of the split source, and all of the source walked whole")
        #expect(share.changed, "a walk that dropped plans is walked again")
        #expect(await feed.nextWave(0) == nil)
    }

    @Test func aWaveTakenUnderTheViewItWasPlannedWithKeepsEveryPlan() async throws {
        let both = FleetView(members: [Self.me, Self.other], me: Self.me)
        let mine = split.filter { both.owns(source: $0.source, path: $0.path) }
        let share = FleetShare(both)
        let feed = WaveFeed(destinations: 1, share: share, splitSources: ["outbox"])
        #expect(feed.send(try wave(mine + whole), to: 0))
        feed.finish()
        let taken = try #require(await feed.nextWave(0))
        #expect(taken.plans.map(\.file.key) == mine + whole)
        #expect(!share.changed)
    }

    @Test func aWalkThatIsNotSplitKeepsEveryPlan() async throws {
        let feed = WaveFeed(destinations: 1)
        #expect(feed.send(try wave(split), to: 0))
        feed.finish()
        let taken = try #require(await feed.nextWave(0))
        #expect(taken.plans.count == split.count)
    }
}
