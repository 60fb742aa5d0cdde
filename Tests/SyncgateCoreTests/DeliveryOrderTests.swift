import Foundation
import SyncgateCore
import SyncgateLocal
import Testing

@Suite("order: and route priority: parsing, located errors, tiers")
struct DeliveryOrderTests {
    let registry = PluginRegistry([LocalDestination.registration])

    func parse(_ text: String) throws -> GatewayConfig {
        try GatewayConfig.parse(text: text, file: "plugins.yaml", baseDirectory: URL(fileURLWithPath: "/cfg"), registry: registry, environment: [:])
    }

    func error(_ text: String) -> ConfigError? {
        do {
            _ = try parse(text)
            Issue.record("the config was accepted")
            return nil
        } catch let error as ConfigError {
            return error
        } catch {
            Issue.record("unexpected error type: \(error)")
            return nil
        }
    }

    /// Two destinations, `defaults:` and routes with priorities; `order` lines go under `defaults:` and `second`.
    static func config(defaults: String = "", second: String = "") -> String {
        """
        version: 1
        sources:
          - name: outbox
            path: out
        defaults:
          concurrency: 2
        \(defaults)
        destinations:
          - name: first
            type: local
            path: one
          - name: second
            type: local
            path: two
        \(second)
        routes:
          - match: ["icons/**"]
            to: [first, second]
            priority: 10
          - match: ["**/*"]
            to: [first, second]
          - match: ["news/**"]
            to: [second]
            priority: 5
        """
    }

    @Test func orderIsADeliveryKeyAndDefaultsToTheWalk() throws {
        let plain = try parse(Self.config())
        #expect(try #require(plain.destination(named: "first")).settings.order == nil)
        #expect(try #require(plain.destination(named: "first")).order == .walk)

        let config = try parse(Self.config(defaults: "  order: size,descending", second: "    order: [priority, size]"))
        let first = try #require(config.destination(named: "first"))
        #expect(first.order == DeliveryOrder([.init(.size, descending: true)]))
        let second = try #require(config.destination(named: "second"))
        #expect(second.order == DeliveryOrder([.init(.priority), .init(.size)]))
        #expect(second.order.keys[0].descending)  // priority: higher first
        #expect(!second.order.keys[1].descending)  // size: small first
        #expect(DeliveryOrder([.init(.modtime)]).keys[0].descending)  // modtime: newest first
        #expect(second.order.description == "priority,descending then size,ascending")
    }

    @Test func aFilesPriorityIsTheHighestOfTheRoutesToThatDestination() throws {
        let config = try parse(Self.config())
        #expect(config.priority(source: "outbox", relativePath: "icons/app.png", destination: "first") == 10)
        #expect(config.priority(source: "outbox", relativePath: "news/today.txt", destination: "second") == 5)
        #expect(config.priority(source: "outbox", relativePath: "news/today.txt", destination: "first") == 0)
        #expect(config.priority(source: "outbox", relativePath: "other.bin", destination: "second") == 0)
    }

    @Test func unknownOrderValuesAreRefusedWithFileLineAndKey() {
        let destination = error(Self.config(second: "    order: biggest"))
        #expect(destination?.keyPath == "destinations[1].order")
        #expect(destination?.line == 15)
        #expect(destination?.description.hasPrefix("plugins.yaml:15:") == true)
        #expect(destination?.description.contains(": destinations[1].order: 'biggest' is not an order (known: priority") == true)

        let direction = error(Self.config(defaults: "  order: size,upwards"))
        #expect(direction?.keyPath == "defaults.order")
        #expect(direction?.line == 7)
        #expect(direction?.message == "'size,upwards': the direction is ascending or descending")

        let mixed = error(Self.config(second: "    order: [priority, mixed]"))
        #expect(mixed?.keyPath.hasPrefix("destinations[1].order") == true)
        #expect(mixed?.message.contains("'mixed' is not supported") == true)

        let twice = error(Self.config(second: "    order: [size, \"size,descending\"]"))
        #expect(twice?.message == "'size' is named twice")

        let priority = error(Self.config().replacingOccurrences(of: "priority: 10", with: "priority: high"))
        #expect(priority?.keyPath == "routes[0].priority")
        #expect(priority?.message.contains("expected a whole number") == true)

        let misspelt = error(Self.config(second: "    ordr: size"))
        #expect(misspelt?.keyPath == "destinations[1].ordr")
        #expect(misspelt?.message.contains("did you mean 'order'") == true)
    }

    static func fields(_ name: String, priority: Int = 0, artwork: Bool = false, size: Int64 = 0, age: Double = 0) -> DeliveryOrder.Fields {
        DeliveryOrder.Fields(priority: priority, isArtwork: artwork, size: size, modificationTime: Date(timeIntervalSince1970: 1_000_000 - age), name: name)
    }

    @Test func tieredKeysCutTiersAndTheOthersOnlyOrder() {
        let files = [
            Self.fields("a", priority: 0, size: 10), Self.fields("b", priority: 5, size: 30), Self.fields("c", priority: 0, size: 5),
            Self.fields("d", priority: 5, size: 20), Self.fields("e", priority: 9, size: 99),
        ]
        let byPriority = DeliveryOrder([.init(.priority)]).tiers(files) { $0 }.map { $0.map(\.name) }
        #expect(byPriority == [["e"], ["b", "d"], ["a", "c"]])  // alike: the walk's order

        let prioritySize = DeliveryOrder([.init(.priority), .init(.size)]).tiers(files) { $0 }.map { $0.map(\.name) }
        #expect(prioritySize == [["e"], ["d", "b"], ["c", "a"]])

        let bySize = DeliveryOrder([.init(.size)]).tiers(files) { $0 }.map { $0.map(\.name) }
        #expect(bySize == [["c", "a", "d", "b", "e"]])
        let largestFirst = DeliveryOrder([.init(.size, descending: true)]).tiers(files) { $0 }.map { $0.map(\.name) }
        #expect(largestFirst == [["e", "b", "d", "a", "c"]])

        #expect(DeliveryOrder.walk.tiers(files) { $0 }.map { $0.map(\.name) } == [["a", "b", "c", "d", "e"]])
        #expect(DeliveryOrder.walk.tiers([DeliveryOrder.Fields]()) { $0 }.isEmpty)
    }

    @Test func artworkModtimeAndName() {
        let files = [Self.fields("b.mp3", age: 50), Self.fields("icon.png", artwork: true, age: 100), Self.fields("a.txt", age: 10)]
        let artwork = DeliveryOrder.artworkFirst.tiers(files) { $0 }.map { $0.map(\.name) }
        #expect(artwork == [["icon.png"], ["b.mp3", "a.txt"]])
        let newest = DeliveryOrder([.init(.modtime)]).tiers(files) { $0 }.map { $0.map(\.name) }
        #expect(newest == [["a.txt", "b.mp3", "icon.png"]])
        let byName = DeliveryOrder([.init(.name)]).tiers(files) { $0 }.map { $0.map(\.name) }
        #expect(byName == [["a.txt", "b.mp3", "icon.png"]])
        let artworkThenName = DeliveryOrder([.init(.artwork), .init(.name, descending: true)]).tiers(files) { $0 }.map { $0.map(\.name) }
        #expect(artworkThenName == [["icon.png"], ["b.mp3", "a.txt"]])
    }
}
