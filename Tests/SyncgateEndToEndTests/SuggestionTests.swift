import Foundation
import SyncgateCore
import SyncgateTestSupport
import Testing

/// "Did you mean" (issue 29): a mistyped command gets the nearest one, as rclone, aws and git answer, and an unknown
/// config key the nearest key that was possible there. The built binary, and the nearness rule itself.
@Suite("Suggestions for mistyped commands and keys (real binary)")
struct SuggestionTests {
    let dir: TemporaryDirectory
    let cli: SyncgateCLI

    init() throws {
        dir = try TemporaryDirectory("sg-suggestions")
        cli = SyncgateCLI(dir: dir)
    }

    @Test func aMistypedCommandGetsTheNearestOne() async throws {
        defer { dir.remove() }
        let cases: [([String], String)] = [
            (["statsu"], "syncgate: unknown command 'statsu'; did you mean 'status'?\n"),
            (["snyc", "--dry-run"], "syncgate: unknown command 'snyc'; did you mean 'sync'?\n"),
            (["--config", "x.yaml", "-v", "vaildate"], "syncgate: unknown command 'vaildate'; did you mean 'validate'?\n"),
            (["plugin", "chek", "--", "/bin/true"], "syncgate: unknown command 'chek'; did you mean 'check'?\n"),
        ]
        for (arguments, expected) in cases {
            let result = try await cli.run(arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr == expected, "\(arguments)")
            #expect(result.stdout.isEmpty)
        }
        // Nothing near: the commands are listed.
        let far = try await cli.run(["frobnicate"])
        #expect(far.status == 64)
        #expect(far.stderr.hasPrefix("syncgate: unknown command 'frobnicate' (commands: check, forget, ls, migrate, plugin, retry, rm, run, status, sync, validate)"), "\(far.stderr)")
        // Words that are not commands where commands are not due are the parser's, as before: a command's own
        // arguments, help.
        #expect(try await cli.run(["help", "status"]).status == 0)
        #expect(try await cli.run(["status", "--helpp"]).stderr.contains("Unknown option '--helpp'"))
    }

    @Test func anUnknownKeyGetsTheNearestKnownOne() async throws {
        defer { dir.remove() }
        try dir.write("outbox/a.txt", "a")
        try dir.write("plugins.yaml", """
            version: 1
            sources: [{name: outbox, path: outbox, exlude: ["*.tmp"]}]
            destinations:
              - name: archive
                type: local
                path: synced
                retyr: {file: 2}
                colour: blue
            """)
        let result = try await cli.run(["validate"])
        #expect(result.status == 78)
        #expect(result.stderr.split(separator: "\n").map(String.init) == [
            "syncgate: plugins.yaml:2:40: sources[0].exlude: unknown key 'exlude'; did you mean 'exclude'?",
            "syncgate: plugins.yaml:7:5: destinations[0].retyr: unknown key 'retyr'; did you mean 'retry'?",
            "syncgate: plugins.yaml:8:5: destinations[0].colour: unknown key 'colour'",
            "syncgate: 3 errors in plugins.yaml",
        ], "\(result.stderr)")
    }

    @Test func nearMeansFewEdits() {
        let commands = ["check", "forget", "ls", "migrate", "plugin", "retry", "rm", "run", "status", "sync", "validate"]
        #expect(NearestName.suggestion(for: "statsu", among: commands) == "status")  // a swap
        #expect(NearestName.suggestion(for: "STATUS", among: commands) == "status")  // case
        #expect(NearestName.suggestion(for: "migarte", among: commands) == "migrate")
        #expect(NearestName.suggestion(for: "rty", among: commands) == nil)  // short words: one edit at most
        #expect(NearestName.suggestion(for: "rn", among: commands) == "rm")  // a tie (rm, run): the first in order
        #expect(NearestName.suggestion(for: "status", among: commands) == nil)  // not a mistake
        #expect(NearestName.suggestion(for: "deploy", among: commands) == nil)
    }
}
