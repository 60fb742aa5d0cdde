import Foundation
import Logging
import SyncgateCore
@testable import SyncgateExec
import SyncgateTestSupport
import Testing

/// Issue 32: a request bounded by `answer_timeout` (`exists`, `delete`, `probe`) is kept alive by `progress`
/// answers (`{"id":N,"progress":0}`), as a `list` is by its entries; a plugin silent past the timeout is taken for
/// hung. The plugins are `/bin/sh` scripts over real pipes.
@Suite("plugin session: keeping a long request alive")
struct PluginKeepAliveTests {
    let dir: TemporaryDirectory

    init() throws {
        dir = try TemporaryDirectory("sg-plugin-alive")
    }

    func session(_ script: String) throws -> PluginSession {
        let process = try PluginProcess(
            executable: "/bin/sh", arguments: ["-c", script],
            environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"], directory: dir.url.path)
        return PluginSession(process: process, label: "plugin 'test'", logger: Logger(label: "test"), cancelGrace: .seconds(5)) { _, _ in }
    }

    @Test func progressKeepsAnExistsAliveBeyondTheAnswerTimeout() async throws {
        defer { dir.remove() }
        // 3 s in all, a word every 0.2 s; the answer timeout is 2 s.
        let alive = try session("""
            read -r request
            i=0; while [ $i -lt 15 ]; do echo '{"id":1,"progress":0}'; sleep 0.2; i=$((i+1)); done
            echo '{"id":1,"ok":{"receipt":null}}'; cat >/dev/null
            """)
        let answer = try await alive.request("exists", ["remote_name": "a.txt"], what: "exists 'a.txt'", idleLimit: .seconds(2))
        #expect(answer["receipt"] == .null)
        try await OffThePool.run { alive.close(grace: .seconds(1)) }
    }

    @Test func silencePastTheAnswerTimeoutIsTakenForHung() async throws {
        defer { dir.remove() }
        // Silent for an hour: only the answer timeout can end the wait. (With 8 s, a run beside `stress-ng --cpu 4`
        // whose threads were all busy for its first minute got the answer before the timer ran.)
        let silent = try session("read -r request; exec sleep 3600")
        do {
            _ = try await silent.request("exists", ["remote_name": "a.txt"], what: "exists 'a.txt'", idleLimit: .seconds(2))
            Issue.record("a plugin silent for an hour answered within a 2 s answer timeout")
        } catch {
            #expect("\(error)".contains("did not answer exists 'a.txt' within 2s (hung?); killed it"), "\(error)")
        }
        #expect(silent.isEnded)
    }
}
