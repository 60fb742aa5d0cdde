import Foundation
import Logging
import SyncgateCore
@testable import SyncgateExec
import SyncgateTestSupport
import Testing

/// How a plugin's session ends: its stderr is read to the end (bounded) before the end is reported, so its
/// last log line is in the message saying it exited, and the count of log lines it had dropped is in the log, whether
/// the plugin crashed or syncgate closed it at the end of a run. Plugins here are `/bin/sh` scripts that write a
/// burst of log lines just before they exit, more than the pipe holds, so that the log is still being read when
/// they are gone.
@Suite("plugin session: the log read to its end")
struct PluginSessionEndTests {
    static let dropped = "log lines dropped (the plugin logs too much)"

    let dir: TemporaryDirectory
    /// Messages logged, in order, each after its level.
    let logs = CapturedLogs()

    /// `chatter`: 3,000 log lines (about 90 KiB, more than a pipe holds), the last one `ERROR last words`.
    init() throws {
        dir = try TemporaryDirectory("sg-plugin-session")
        let chatter = (1...2999).map { "INFO chatter line \($0) of a plugin that logs a lot" } + ["ERROR last words"]
        try dir.write("chatter", chatter.joined(separator: "\n") + "\n")
    }

    /// A session of `/bin/sh -c script`, run in the test's folder.
    func session(_ script: String) throws -> PluginSession {
        let process = try PluginProcess(
            executable: "/bin/sh", arguments: ["-c", script],
            environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"], directory: dir.url.path)
        return PluginSession(process: process, label: "plugin 'test'", logger: logs.logger(), cancelGrace: .seconds(5)) { _, _ in }
    }

    /// Sends a put and returns the message of the error that ends it (nil when it was answered).
    func failedPut(_ session: PluginSession) async -> String? {
        do {
            _ = try await session.request("put", ["remote_name": "a.txt"], what: "put 'a.txt'")
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test func aPluginThatCrashesIsReportedWithItsLastLogLine() async throws {
        defer { dir.remove() }
        let session = try session("read request; cat chatter >&2; exit 3")
        let message = await failedPut(session)
        #expect(message == "plugin 'test' exited (status 3); its last log line: ERROR last words", "\(message ?? "answered")")
        // The end is logged before the request fails.
        let logged = logs.lines
        let count = logged.firstIndex { $0.hasPrefix("warning plugin 'test': ") && $0.hasSuffix(Self.dropped) }
        let exit = logged.firstIndex { $0 == "error plugin 'test' exited (status 3); its last log line: ERROR last words" }
        #expect(count != nil && exit != nil && count! < exit!, "the count of lines dropped is out before the end is reported: \(logged.suffix(5))")
    }

    /// The end of a run: syncgate closes the plugin's stdin; the plugin logs on its way out.
    @Test func closingASessionWaitsForTheLastLinesOfItsLog() async throws {
        defer { dir.remove() }
        let session = try session("cat >/dev/null; cat chatter >&2; exit 0")
        try await OffThePool.run { session.close(grace: .seconds(60)) }
        let logged = logs.lines
        #expect(logged.contains { $0.hasSuffix(Self.dropped) }, "\(logged.suffix(5))")
        #expect(session.lastLog == "ERROR last words")
        #expect(session.isEnded)
        #expect(!logged.contains { $0.hasPrefix("error") }, "an expected exit is no error: \(logged.suffix(5))")
    }

    /// A process the plugin started keeps its stderr open after the plugin exited: its end is reported all the same
    /// (after 2 s), saying so once.
    @Test func aChildThatKeepsThePluginsStderrOpenDoesNotHoldUpItsEnd() async throws {
        defer { dir.remove() }
        let session = try session("read request; sleep 300 </dev/null >/dev/null & echo 'INFO bye' >&2; exit 0")
        defer { kill(-session.process.pid, SIGKILL) }
        let message = await failedPut(session)
        #expect(message?.hasPrefix("plugin 'test' exited (status 0)") == true, "\(message ?? "answered")")
        try await OffThePool.run { session.close(grace: .seconds(1)) }
        let held = logs.lines.filter { $0.contains("its stderr is still open") }
        #expect(held == ["warning plugin 'test': its stderr is still open 2s after it ended (a process it started keeps it?); its last log lines may be missing"],
                "\(logs.lines.suffix(5))")
    }

    /// A process the plugin started keeps writing to its stderr after the plugin exited: the wait for the end of the
    /// log is bounded in bytes (and time), not only while the pipe is quiet; the end is reported, saying so once.
    @Test func aChildThatFloodsThePluginsStderrDoesNotHoldUpItsEnd() async throws {
        defer { dir.remove() }
        let session = try session("read request; yes 'INFO flood from a child' </dev/null 1>&2 & echo 'INFO bye' >&2; exit 0")
        defer { kill(-session.process.pid, SIGKILL) }
        let message = await failedPut(session)
        #expect(message?.hasPrefix("plugin 'test' exited (status 0)") == true, "\(message ?? "answered")")
        try await OffThePool.run { session.close(grace: .seconds(1)) }
        let held = logs.lines.filter { $0.contains("its stderr is still") }
        #expect(held.count == 1 && held[0].hasPrefix("warning plugin 'test': its stderr is still being written "),
                "\(held) \(logs.lines.suffix(3))")
    }
}
