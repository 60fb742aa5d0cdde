import Foundation
import SyncgateTestSupport
import Testing

/// Issue 32: `syncgate plugin check` against the broken plugins of the test support (Tests/ExecPlugins/test_plugin.py
/// `--misbehave MODE`): each fails the check, and the report names the step and what the plugin did. The behaving
/// test plugin passes every step, probe, batch-less delete, Retry-After and the paced cancel included.
@Suite("plugin check against broken plugins (real binary)")
struct PluginCheckTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-check")
        cli = SyncgateCLI(dir: dir)
    }

    /// Runs the check against the test plugin in `mode`; expects it to fail, with `step` failing and `says` in the report.
    func expectCaught(_ mode: String, step: String, says: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        defer { dir.remove() }
        let result = try await cli.run(["plugin", "check", "--", ExecPluginTests.testPlugin, "--misbehave", mode], timeout: 240)
        #expect(result.status == 1, "\(result.stdout)\(result.stderr.suffix(2000))", sourceLocation: sourceLocation)
        let line = result.stdout.split(separator: "\n").first { $0.hasPrefix("FAIL \(step)") }
        #expect(line != nil, "no failing step '\(step)': \(result.stdout)", sourceLocation: sourceLocation)
        #expect(line?.contains(says) == true, "the step does not say '\(says)': \(result.stdout)", sourceLocation: sourceLocation)
        #expect(result.stdout.contains("plugin check: FAILED"), "\(result.stdout)", sourceLocation: sourceLocation)
        expectOneLineEach(result.stdout, sourceLocation: sourceLocation)
    }

    /// Each step is one line of the report, whatever the names put (one holds a newline) or the plugin said.
    func expectOneLineEach(_ report: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let stray = report.split(separator: "\n").filter { line in
            !["checking plugin ", "  runs in ", "  environment: ", "ok   ", "FAIL ", "plugin check: "].contains { line.hasPrefix($0) }
        }
        #expect(stray.isEmpty, "lines that are no step's: \(stray)", sourceLocation: sourceLocation)
    }

    @Test func theBehavingTestPluginPassesEveryStep() async throws {
        defer { dir.remove() }
        let result = try await cli.run(["plugin", "check", "--", ExecPluginTests.testPlugin], timeout: 240)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr.suffix(2000))")
        for step in ["ok   a batch of 8 puts in one line, each answered once by its id", "ok   probe is answered ok", "ok   cancel ends a put paced at", "ok   Retry-After", "ok   errors of each class and scope",
                     "ok   exists: a receipt for the bytes put", "ok   batch delete of 2 names put and 1 never put",
                     "ok   list names what was put", "ok   delete removes each name",
                     "ok   exits within 3 s", "checks: all passed", "runs in ", "environment: "] {
            #expect(result.stdout.contains(step), "lacks '\(step)': \(result.stdout)")
        }
        // It declares every capability: each step ran (none skipped), and none failed.
        #expect(!result.stdout.contains("skipped"), "\(result.stdout)")
        #expect(!result.stdout.contains("FAIL"), "\(result.stdout)")
        expectOneLineEach(result.stdout)
    }

    /// Issue 30: the test plugin speaking version 1 line by line, as a plugin written before batches: it passes
    /// every step as before, the batch step skipped (it does not declare `batch`).
    @Test func theTestPluginWithoutBatchesPassesEveryStep() async throws {
        defer { dir.remove() }
        let result = try await cli.run(["plugin", "check", "--", ExecPluginTests.testPlugin, "--unbatched"], timeout: 240)
        #expect(result.status == 0, "\(result.stdout)\(result.stderr.suffix(2000))")
        #expect(!result.stdout.contains("FAIL"), "\(result.stdout)")
        let skipped = result.stdout.split(separator: "\n").filter { $0.contains("skipped") }
        #expect(skipped == ["ok   a batch of 8 puts in one line, each answered once by its id: skipped: no batch capability (requests go a line each)"], "\(result.stdout)")
        #expect(!result.stdout.contains("capabilities [names_distinct, resend_harmless, batch_delete, existing_copy, probe, list, delete, faults, paces, batch]"))
        expectOneLineEach(result.stdout)
    }

    /// Issue 30: a plugin that breaks the batch framing is killed for it, and the step says what it wrote.
    @Test(arguments: [("batch-empty", "broke the protocol: an empty batch"),
                      ("batch-junk", "broke the protocol: message 2 of a batch is not an answer object"),
                      ("batch-undeclared", "a batch (a JSON array) from a plugin that did not declare the capability")])
    func aBrokenBatchIsCaught(mode: String, says: String) async throws {
        try await expectCaught(mode, step: "put of 11 awkward names", says: says)
    }

    @Test func progressGoingBackIsCaught() async throws {
        try await expectCaught("progress-back", step: "put of 11 awkward names", says: "going back, from 1000 to 1")
    }

    @Test func ignoringACancelOnASlowStreamIsCaught() async throws {
        try await expectCaught("ignore-cancel", step: "cancel ends a put paced", says: "did not end the cancelled put 'cancelled.bin'")
    }

    @Test func answeringTwiceIsCaught() async throws {
        try await expectCaught("answer-twice", step: "put of 11 awkward names", says: "after its final answer")
    }

    @Test func noiseOnStdoutIsCaught() async throws {
        try await expectCaught("noise", step: "put of 11 awkward names", says: "wrote a line that is not JSON: 'copying ")
    }

    @Test func notExitingWhenStdinClosesIsCaught() async throws {
        try await expectCaught("no-exit", step: "exits within 3 s once its stdin closes", says: "still running 3 s after its stdin closed")
    }

    @Test func ignoringFaultIsCaught() async throws {
        try await expectCaught("ignore-fault", step: "errors of each class and scope", says: "it succeeded (the fault was ignored)")
    }

    /// An interpreter then a script: the report and the log name the script, not the interpreter.
    @Test func aScriptRunByAnInterpreterIsNamedAfterTheScript() async throws {
        defer { dir.remove() }
        let check = try await cli.run(["plugin", "check", "--", "python3", ExecPluginTests.testPlugin, "--misbehave", "noise"], timeout: 240)
        #expect(check.stdout.contains("checking plugin 'test_plugin.py'"), "\(check.stdout)")
        #expect(check.stdout.contains("plugin 'test_plugin.py' wrote a line that is not JSON"), "\(check.stdout)")
        #expect(!check.output.contains("plugin 'python3'"), "\(check.output)")
        try dir.write("outbox/a.txt", "a")
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox}]
            destinations:
              - name: copies
                type: exec
                command: [python3, "\(ExecPluginTests.testPlugin)", --misbehave, garbage]
                retry: {file: 0}
                settings: {path: out}
            """)
        let sync = try await cli.run(["sync"])
        #expect(sync.status != 0)
        #expect(sync.stderr.contains("plugin 'test_plugin.py' wrote a line that is not JSON"), "\(sync.stderr.suffix(2000))")
        #expect(!sync.stderr.contains("plugin 'python3'"), "\(sync.stderr.suffix(2000))")
    }
}
