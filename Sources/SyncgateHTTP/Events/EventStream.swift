import HTTPTypes
import Hummingbird
import ServiceLifecycle
import SyncgateCore

/// `GET /api/events`: every delivery event as Server-Sent Events, one `data:` line each in the `sync --json` form;
/// `{"event":"recorded"}` when the ledger has written outcomes (at most every ``recordedSpacing``), so that a
/// reader of `/api/status` knows to read it again; and a comment line every `heartbeat` so that proxies keep the
/// connection open. It ends when the client goes
/// (the request's inbound side closes: the events subscription is dropped at once), when the gateway's events
/// end, or when the server shuts down (gracefully: the response ends as usual).
struct EventStream: Sendable {
    let events: AsyncStream<DeliveryEvent>
    let recorded: AsyncStream<Void>
    let heartbeat: Duration
    /// The stream's place among those open, held as long as its body is.
    let slot: EventStreamSlots.Slot

    /// Events held for a client that reads slowly; beyond that the oldest are dropped (the page then refreshes
    /// from `/api/status` anyway).
    static let backlog = 10_000
    /// The least time between two `recorded` messages: a busy gateway commits many times a second.
    static let recordedSpacing = Duration.milliseconds(250)
    static let recordedChunk = #"data: {"event":"recorded"}"# + "\n\n"

    func response(for request: Request) -> Response {
        let headers: HTTPFields = [
            .contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-store", .xAccelBuffering: "no",
        ]
        let events = self.events, recorded = self.recorded, heartbeat = self.heartbeat, slot = self.slot
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            defer { withExtendedLifetime(slot) {} }
            do {
                try await request.body.consumeWithCancellationOnInboundClose { _ in
                    // The reconnection delay an EventSource uses, and a first line so that the client sees the
                    // stream open before the first event.
                    try await writer.write(ByteBuffer(string: "retry: 3000\n: syncgate events\n\n"))
                    try await EventStream.relay(events, recorded: recorded, heartbeat: heartbeat) { chunk in
                        try await writer.write(ByteBuffer(string: chunk))
                    }
                }
            } catch {
                // The client went (the inbound side closed, or a write failed), or the server stops: the stream
                // ends either way.
            }
            try? await writer.finish(nil)
        })
    }

    /// Writes each event, each `recorded` notice and each heartbeat, in order, until the events end or the task is
    /// cancelled.
    static func relay(_ events: AsyncStream<DeliveryEvent>, recorded: AsyncStream<Void>, heartbeat: Duration,
                      write: (String) async throws -> Void) async throws {
        let output = EventBacklog(capacity: backlog)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events { output.append(EventStream.chunk(event)) }
                output.finish()
            }
            group.addTask {
                // Commits close together become one notice: the signal holds one, and this waits between two.
                for await _ in recorded {
                    output.append(EventStream.recordedChunk)
                    try await Task.sleep(for: recordedSpacing)
                }
            }
            group.addTask {
                while true {
                    try await Task.sleep(for: heartbeat)
                    output.append(": keep-alive\n\n")
                }
            }
            try await withGracefulShutdownHandler {
                // Whatever waits goes out in one write: a burst costs a few writes, not one per event.
                while let (chunks, dropped) = await output.takeAll() {
                    let lost = dropped > 0 ? ": \(dropped) older events dropped (this client read too slowly)\n\n" : ""
                    try await write(lost + chunks.joined())
                }
            } onGracefulShutdown: {
                output.finish()
            }
            group.cancelAll()
            if Task.isCancelled { throw CancellationError() }
        }
    }

    /// One event as an SSE message: its `sync --json` line (one line: JSON escapes every line break).
    static func chunk(_ event: DeliveryEvent) -> String {
        "data: " + EventJSON.line(event) + "\n\n"
    }
}
