import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// `/api/events` over a real connection: the events of a pass as `sync --json` prints them, heartbeats on a quiet
/// stream, and the end of the stream when the client goes or the server stops.
@Suite("event stream", .timeLimit(.minutes(15)))
struct EventStreamTests {
    /// Waits until `condition` holds (false after `seconds`: a bound against a hang, not a speed).
    static func eventually(_ seconds: Double = 60, _ condition: () -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition()
    }

    /// Opens the stream in a task of its own, which collects every message until cancelled or the stream ends;
    /// returns once the opening message has arrived.
    static func open(_ url: String, into messages: LockedList<String>) async throws -> Task<Void, any Error> {
        let (opened, open) = AsyncStream<Void>.makeStream()
        let reader = Task {
            defer { open.finish() }
            var client = try await EventStreamClient(url: url)
            messages.append("status \(client.status) \(client.contentType ?? "")")
            while let message = try await client.next() {
                messages.append(message)
                open.yield()
            }
            messages.append("(ended)")
        }
        var signal = opened.makeAsyncIterator()
        await signal.next()
        return reader
    }

    @Test func aPassIsStreamedAsTheEventsOfSyncJSONAndTheStreamEndsWhenTheClientGoes() async throws {
        let gateway = try TestGateway()
        defer { gateway.stop() }
        try gateway.dir.write("outbox/a.txt", "alpha")
        try gateway.dir.write("outbox/docs/b \"quoted\".md", "# bravo\nline two")
        let server = try await RunningServer(gateway: gateway)

        // The same events taken straight from the gateway, in the `sync --json` form.
        let direct = LockedList<String>()
        let events = gateway.events()
        let directReader = Task { for await event in events { direct.append(EventJSON.line(event)) } }

        let messages = LockedList<String>()
        let reader = try await EventStreamTests.open(server.base + "/api/events", into: messages)
        #expect(messages.all.first == "status 200 text/event-stream; charset=utf-8")
        #expect(messages.all.dropFirst().first?.hasPrefix("retry: ") == true)
        #expect(gateway.fanOut.subscriberCount == 2)

        let summary = try await gateway.runPass()
        #expect(summary.uploaded == 2)
        let sent = gateway.fanOut.sentCount
        #expect(sent >= 6, "queued, started and synced of two files at least")
        let recordedNotice = #"{"event":"recorded"}"#
        func streamed() -> [String] { messages.all.compactMap(EventStreamClient.data(of:)).filter { $0 != recordedNotice } }
        #expect(await EventStreamTests.eventually { direct.count == sent && streamed().count == sent })
        #expect(streamed() == direct.all)
        // The pass's outcomes were written, and the stream said so.
        #expect(await EventStreamTests.eventually { messages.all.compactMap(EventStreamClient.data(of:)).contains(recordedNotice) })
        let synced = streamed().compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .filter { $0["event"] as? String == "synced" }
        #expect(Set(synced.compactMap { $0["path"] as? String }) == ["a.txt", "docs/b \"quoted\".md"])
        #expect(synced.allSatisfy { $0["destination"] as? String == "archive" && $0["uploaded"] as? Bool == true })

        // The client goes: its subscription ends; the gateway's own one is left.
        reader.cancel()
        #expect(await EventStreamTests.eventually { gateway.fanOut.subscriberCount == 1 })
        directReader.cancel()
        try await server.stop()
    }

    /// A reader of `/api/status` learns when what it reads has changed: an outcome is written after its event (in
    /// batches), or by no pass at all (a forget). Byte progress is not announced, and a burst of commits is a few
    /// notices, not one each.
    @Test func ledgerCommitsAreAnnouncedOnceTheyAreWritten() async throws {
        let gateway = try TestGateway()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway)
        let messages = LockedList<String>()
        let reader = try await EventStreamTests.open(server.base + "/api/events", into: messages)
        let notice = #"{"event":"recorded"}"#
        func notices() -> Int { messages.all.compactMap(EventStreamClient.data(of:)).filter { $0 == notice }.count }

        for bytes in 1...20 { try gateway.ledger.markProgress(FileKey(source: "outbox", path: "a.txt"), destination: "archive", bytes: Int64(bytes)) }
        try await Task.sleep(for: .milliseconds(600))
        #expect(notices() == 0, "byte progress changes nothing status counts")

        _ = try await gateway.ledger.forgetFailed(destination: nil, paths: [])
        #expect(await EventStreamTests.eventually { notices() == 1 })

        let commits = 200
        for _ in 0..<commits { _ = try await gateway.ledger.forgetFailed(destination: nil, paths: []) }
        #expect(await EventStreamTests.eventually { notices() >= 2 }, "the last commit of a burst is announced")
        try await Task.sleep(for: .milliseconds(600))
        #expect(notices() < 1 + commits, "\(notices()) notices for \(commits) commits")
        reader.cancel()
        try await server.stop()
    }

    @Test func aQuietStreamGetsHeartbeats() async throws {
        let gateway = try TestGateway()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway, heartbeat: .milliseconds(100))
        let messages = LockedList<String>()
        let reader = try await EventStreamTests.open(server.base + "/api/events", into: messages)
        #expect(await EventStreamTests.eventually { messages.all.filter { $0 == ": keep-alive" }.count >= 2 })
        #expect(!messages.all.contains { $0.hasPrefix("data:") })
        reader.cancel()
        #expect(await EventStreamTests.eventually { gateway.fanOut.subscriberCount == 0 })
        try await server.stop()
    }

    @Test func theStreamEndsWhenTheGatewayStopsItsEvents() async throws {
        let gateway = try TestGateway()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway)
        let messages = LockedList<String>()
        let reader = try await EventStreamTests.open(server.base + "/api/events", into: messages)
        gateway.fanOut.finish()
        try await reader.value
        #expect(messages.all.last == "(ended)")
        try await server.stop()
    }

    @Test func stoppingTheServerEndsOpenStreams() async throws {
        let gateway = try TestGateway()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway)
        let messages = LockedList<String>()
        let reader = try await EventStreamTests.open(server.base + "/api/events", into: messages)
        try await server.stop()
        // The client sees its stream end (cleanly or cut), and the subscription is gone.
        _ = try? await reader.value
        #expect(await EventStreamTests.eventually { gateway.fanOut.subscriberCount == 0 })
        // The listening socket is closed on the server's event loop, which a loaded full run has left a moment behind.
        #expect(await EventStreamTests.eventually(30) { !Loopback.isListening(port: server.port) })
    }

    @Test func openStreamsAreBoundedAndAClosedOneFreesItsPlace() async throws {
        let gateway = try TestGateway()
        defer { gateway.stop() }
        let server = try await RunningServer(gateway: gateway, maxEventStreams: 2)
        let first = LockedList<String>(), second = LockedList<String>()
        let a = try await EventStreamTests.open(server.base + "/api/events", into: first)
        let b = try await EventStreamTests.open(server.base + "/api/events", into: second)
        let refused = try await HTTPCall(base: server.base).get("/api/events")
        #expect(refused.status == 503)
        #expect(refused.headers.first(name: "retry-after") == "10")
        #expect(gateway.fanOut.subscriberCount == 1, "one subscription serves every stream; a refused one adds nothing")
        a.cancel()
        // Its place is free again once the server has let go of the closed stream.
        var reopened = false
        let deadline = Date().addingTimeInterval(60)
        while !reopened && Date() < deadline {
            let messages = LockedList<String>()
            let c = try await EventStreamTests.open(server.base + "/api/events", into: messages)
            reopened = messages.all.first?.hasPrefix("status 200") == true
            c.cancel()
            if !reopened { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(reopened)
        b.cancel()
        #expect(await EventStreamTests.eventually { gateway.fanOut.subscriberCount == 0 }, "the subscription ends with the last stream")
        try await server.stop()
    }
}
