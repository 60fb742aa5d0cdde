import Foundation
import Logging
import SyncgateCore
@testable import SyncgateExec
import SyncgateTestSupport
import Testing

/// Issue 30: batches (docs/plugins.md, "Batches"), negotiated in `hello`. A scripted plugin keeps every line it reads
/// (input.log), holds puts until four are in, then answers them out of order, across two writes (batches when it
/// declared `batch`, else a line each): one with an error, one (a name starting with `slow`) only when cancelled.
@Suite("plugin batches")
struct PluginBatchTests {
    let dir: TemporaryDirectory

    static let script = #"""
        import json, os, sys
        declare = "batch" in sys.argv[1:]
        log = open("input.log", "a")
        batched = False
        held = []

        def write(msgs):
            if batched and len(msgs) > 1:
                data = json.dumps(msgs) + "\n"
            else:
                data = "".join(json.dumps(m) + "\n" for m in msgs)
            os.write(1, data.encode())

        def answer(req):
            if req["remote_name"].startswith("bad"):
                return {"id": req["id"], "error": {"class": "permanent", "scope": "file", "code": "refused", "message": "bad name"}}
            return {"id": req["id"], "ok": {"detail": "got " + req["remote_name"]}}

        rest = b""
        while True:
            chunk = os.read(0, 65536)
            if not chunk:
                break
            *lines, rest = (rest + chunk).split(b"\n")
            for line in lines:
                if not line.strip():
                    continue
                log.write(line.decode() + "\n"); log.flush()
                msg = json.loads(line)
                for req in (msg if isinstance(msg, list) else [msg]):
                    op, rid = req.get("op"), req.get("id")
                    if op == "hello":
                        offered = declare and bool(req.get("batch"))
                        write([{"id": rid, "ok": {"protocol": 1, "capabilities": {"batch": offered}}}])
                        batched = offered
                    elif op == "configure":
                        write([{"id": rid, "ok": {}}])
                    elif op == "put":
                        held.append(req)
                        if len(held) == 4:
                            ready = [r for r in held if not r["remote_name"].startswith("slow")]
                            held = [r for r in held if r["remote_name"].startswith("slow")]
                            ready.reverse()
                            write([answer(r) for r in ready[:2]])
                            write([{"id": ready[2]["id"], "progress": 1}] + [answer(r) for r in ready[2:]])
                    elif op == "cancel":
                        for r in [r for r in held if r["id"] == rid]:
                            held.remove(r)
                            write([{"id": rid, "error": {"class": "retryable", "scope": "file", "code": "cancelled", "message": "cancelled"}}])
        """#

    init() throws {
        dir = try TemporaryDirectory("sg-plugin-batch")
        try dir.write("plugin.py", Self.script)
    }

    func host(declaring batch: Bool) -> PluginHost {
        var spec = PluginSpec(executable: "/usr/bin/env", arguments: ["python3", "plugin.py"] + (batch ? ["batch"] : []),
                              environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"], directory: dir.url.path,
                              destination: "d", answerTimeout: .seconds(60), cancelGrace: .seconds(30))
        spec.concurrency = 4
        return PluginHost(spec: spec, logger: Logger(label: "test"))
    }

    /// Four puts posted while the outbox is held, so that they leave together; what each ended with.
    func putFour(_ session: PluginSession, _ names: [String], cancelling: String? = nil) async -> [String: String] {
        session.outbox.hold()
        return await withTaskGroup(of: (String, String).self) { group in
            for name in names {
                group.addTask {
                    do {
                        let answer = try await session.request("put", ["remote_name": .string(name)], what: "put '\(name)'")
                        return (name, answer["detail"]?.string ?? "?")
                    } catch let body as PluginErrorBody {
                        return (name, "error \(body.code ?? "")")
                    } catch {
                        return (name, "\(type(of: error))")
                    }
                }
            }
            while session.outbox.queued < names.count { try? await Task.sleep(for: .milliseconds(5)) }
            try? session.outbox.release()
            if let cancelling {
                // Cancelled once the other three are answered: by then it is in the plugin's hands.
                while session.state.withLock({ $0.inFlight.count }) > 1 { try? await Task.sleep(for: .milliseconds(5)) }
                let id = session.state.withLock { state in state.inFlight.first { $0.value.waiter.what == "put '\(cancelling)'" }?.key }
                if let id { session.cancel(id) }
            }
            var all: [String: String] = [:]
            for await (name, outcome) in group { all[name] = outcome }
            return all
        }
    }

    func inputLines() throws -> [String] {
        String(decoding: try dir.read("input.log"), as: UTF8.self).split(separator: "\n").map(String.init)
    }

    @Test func aPluginThatDeclaresBatchGetsRequestsTogetherAndAnswersThemOutOfOrder() async throws {
        defer { dir.remove() }
        let host = host(declaring: true)
        let session = try await host.session()
        #expect(host.capabilities?.batch == true)
        #expect(session.outbox.batched)
        let outcomes = await putFour(session, ["a", "b", "bad", "d"])
        #expect(outcomes == ["a": "got a", "b": "got b", "bad": "error refused", "d": "got d"], "\(outcomes)")
        #expect(!session.isEnded, "an error for one request of a batch is that request's: \(session.unexpectedEnd ?? "")")
        let lines = try inputLines()
        #expect(lines.first?.contains(#""batch":true"#) == true, "hello offers batches: \(lines.first ?? "")")
        // hello and configure a line each, then the four puts in one batch.
        #expect(lines.count == 3 && lines[2].hasPrefix("[") && lines[2].components(separatedBy: #""op":"put""#).count == 5, "\(lines)")
        try await OffThePool.run { host.stop() }
    }

    @Test func aPluginThatDoesNotDeclareBatchGetsALineEach() async throws {
        defer { dir.remove() }
        let host = host(declaring: false)
        let session = try await host.session()
        #expect(host.capabilities?.batch == false)
        #expect(!session.outbox.batched)
        let outcomes = await putFour(session, ["a", "b", "bad", "d"])
        #expect(outcomes == ["a": "got a", "b": "got b", "bad": "error refused", "d": "got d"], "\(outcomes)")
        let lines = try inputLines()
        #expect(lines.count == 6 && !lines.contains { $0.hasPrefix("[") }, "version 1 framing, a line each: \(lines)")
        try await OffThePool.run { host.stop() }
    }

    @Test(arguments: [true, false])
    func aCancelInTheMiddleOfABatchEndsOnlyThatRequest(batch: Bool) async throws {
        defer { dir.remove() }
        let host = host(declaring: batch)
        let session = try await host.session()
        let outcomes = await putFour(session, ["a", "slow", "bad", "d"], cancelling: "slow")
        #expect(outcomes == ["a": "got a", "slow": "CancellationError", "bad": "error refused", "d": "got d"], "\(outcomes)")
        // The plugin ends the cancelled put (its late answer dropped), and is not taken for hung.
        let asked = ContinuousClock.now
        while session.cancelledInFlight > 0, ContinuousClock.now - asked < .seconds(60) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(session.cancelledInFlight == 0)
        #expect(!session.isEnded, "\(session.unexpectedEnd ?? "")")
        try await OffThePool.run { host.stop() }
    }

    /// How syncgate frames what it writes: a batch of several messages, a lone one as a plain line, and no batch
    /// longer than a line may be.
    @Test func framingOfWhatSyncgateWrites() {
        let text = { (bytes: [UInt8]) in String(decoding: bytes, as: UTF8.self) }
        #expect(text(PluginFraming.bytes([#"{"id":1}"#, #"{"id":2}"#], batched: true)) == "[{\"id\":1},{\"id\":2}]\n")
        #expect(text(PluginFraming.bytes([#"{"id":1}"#], batched: true)) == "{\"id\":1}\n")
        #expect(text(PluginFraming.bytes([#"{"id":1}"#, #"{"id":2}"#], batched: false)) == "{\"id\":1}\n{\"id\":2}\n")
        let big = "{\"pad\":\"" + String(repeating: "x", count: 400_000) + "\"}"
        let lines = text(PluginFraming.bytes([big, big, big, big], batched: true)).split(separator: "\n")
        #expect(lines.count == 2 && lines.allSatisfy { $0.utf8.count <= PluginProtocol.maxLineBytes }, "\(lines.map(\.utf8.count))")
    }

    /// How a plugin's batch lines are read: in order; refused whole when it did not declare batches, when empty, or
    /// when a message is not an answer object.
    @Test func framingOfWhatAPluginWrites() throws {
        let line = { (text: String) in ArraySlice(Array(text.utf8)) }
        let answers = try PluginFraming.answers(line(#"[{"id":4,"progress":1},{"id":4,"ok":{}},{"id":3,"error":{"class":"permanent"}}]"#), batched: true)
        #expect(answers.map(\.id) == [4, 4, 3] && answers.map(\.isFinal) == [false, true, true])
        #expect(try PluginFraming.answers(line(#"{"id":4,"ok":{}}"#), batched: true).count == 1)
        for (text, batched, says) in [
            (#"[{"id":4,"ok":{}}]"#, false, "did not declare the capability \"batch\""),
            ("[]", true, "an empty batch"),
            (#"[{"id":4,"ok":{}},7]"#, true, "message 2 of a batch is not an answer object"),
            (#"[[{"id":4,"ok":{}}]]"#, true, "batches do not nest"),
            (#"[{"id":4,"ok":{}},{"id":5}]"#, true, "an answer needs one of"),
        ] {
            #expect(throws: PluginViolation.self, "\(text)") { try PluginFraming.answers(line(text), batched: batched) }
            do {
                _ = try PluginFraming.answers(line(text), batched: batched)
            } catch {
                #expect(error.description.contains(says), "\(text): \(error)")
            }
        }
    }
}
