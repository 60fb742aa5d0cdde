import HTTPTypes
import Hummingbird
import ServiceLifecycle
import SyncgateCore

/// `GET /api/events`: every delivery event as Server-Sent Events, one `data:` line each in the `sync --json` form;
/// `{"event":"recorded"}` when the ledger has written outcomes (at most every ``recordedSpacing``), so that a
/// reader of `/api/status` knows to read it again; and a comment line every `heartbeat` so that proxies keep the
/// connection open. Its events come from the server's one ``EventBroadcast`` through a bounded ``EventBacklog``. It
/// ends when the client goes (the request's inbound side closes: its backlog leaves the broadcast at once), when the
/// gateway's events end, or when the server shuts down (gracefully: the response ends as usual).
struct EventStream: Sendable {
    let broadcast: EventBroadcast
    let heartbeat: Duration
    /// The stream's place among those open, held as long as its body is.
    let slot: EventStreamSlots.Slot

    /// The bytes of messages held for a client that reads slowly (about a thousand events); beyond that the oldest
    /// are dropped and a `dropped` event says how many (the page then refreshes from `/api/status`).
    static let backlogBytes = 256 << 10
    /// The least time between two `recorded` messages: a busy gateway commits many times a second.
    static let recordedSpacing = Duration.milliseconds(250)
    static let recordedChunk = #"data: {"event":"recorded"}"# + "\n\n"

    /// The message that tells a client `count` events were dropped for it.
    static func droppedChunk(_ count: Int) -> String {
        #"data: {"event":"dropped","count":"# + "\(count)}\n\n"
    }

    func response(for request: Request) -> Response {
        let headers: HTTPFields = [
            .contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-store", .xAccelBuffering: "no",
        ]
        let broadcast = self.broadcast, heartbeat = self.heartbeat, slot = self.slot
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            defer { withExtendedLifetime(slot) {} }
            let output = broadcast.open()
            defer { broadcast.close(output) }
            do {
                try await request.body.consumeWithCancellationOnInboundClose { _ in
                    // The reconnection delay an EventSource uses, and a first line so that the client sees the
                    // stream open before the first event.
                    try await writer.write(ByteBuffer(string: "retry: 3000\n: syncgate events\n\n"))
                    try await EventStream.relay(output, heartbeat: heartbeat) { bytes in
                        try await writer.write(bytes)
                    }
                }
            } catch {
                // The client went (the inbound side closed, or a write failed), or the server stops: the stream
                // ends either way.
            }
            try? await writer.finish(nil)
        })
    }

    /// Writes what the broadcast puts in `output`, and a heartbeat when nothing happens, in order, until `output`
    /// is finished or the task is cancelled. The batches are written as they are (shared with the other streams,
    /// never copied), after a `dropped` event when some were lost.
    static func relay(_ output: EventBacklog, heartbeat: Duration, write: (ByteBuffer) async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                while true {
                    try await Task.sleep(for: heartbeat)
                    output.append(": keep-alive\n\n")
                }
            }
            try await withGracefulShutdownHandler {
                while let taken = await output.takeAll() {
                    if taken.dropped > 0 { try await write(ByteBuffer(string: droppedChunk(taken.dropped))) }
                    for batch in taken.batches { try await write(batch) }
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
