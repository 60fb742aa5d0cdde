import Foundation
import Logging
import SyncgateCore
@testable import SyncgateExec
import SyncgateTestSupport
import Testing

/// A paced put asks for one piece at a time: a second `want` before the first is granted breaks the protocol (each
/// waiting want holds a task, so they are bounded by the puts in flight).
@Suite("plugin session: one want at a time")
struct PluginWantTests {
    @Test func aSecondWantBeforeTheGrantKillsThePlugin() async throws {
        let dir = try TemporaryDirectory("sg-plugin-want")
        defer { dir.remove() }
        let process = try PluginProcess(
            executable: "/bin/sh", arguments: ["-c", #"read -r put; echo '{"id":1,"want":1048576}'; echo '{"id":1,"want":1048576}'; cat >/dev/null"#],
            environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"], directory: dir.url.path)
        let session = PluginSession(process: process, label: "plugin 'test'", logger: Logger(label: "test"), cancelGrace: .seconds(5)) { _, _ in }
        // 1 KiB/s: the first MiB is not granted for many minutes.
        let slow = SendPacing(bucket: TokenBucket(perSecond: 1024, burst: 1))
        do {
            _ = try await session.request("put", ["remote_name": "a.txt"], what: "put 'a.txt'", paces: true, pacing: slow)
            Issue.record("the put was answered")
        } catch {
            #expect("\(error)".contains("asked again (want) for put 'a.txt' before its last want was granted; killed it"), "\(error)")
        }
        #expect(session.isEnded)
    }
}
