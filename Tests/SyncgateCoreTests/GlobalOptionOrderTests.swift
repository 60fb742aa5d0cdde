import SyncgateCore
import Testing

@Suite("global options before or after the command")
struct GlobalOptionOrderTests {
    typealias Command = GlobalOptionOrder.Command
    let order = GlobalOptionOrder(
        valued: ["--config", "--log-format"], flags: ["--verbose", "--quiet"], shortFlags: ["v", "q"],
        commands: Command(["sync": Command(), "run": Command(), "validate": Command(), "plugin": Command(["check": Command()])])
    )

    @Test func optionsBeforeTheCommandMoveAfterIt() {
        #expect(order.hoist(["--config", "x.yaml", "sync"]) == ["sync", "--config", "x.yaml"])
        #expect(order.hoist(["--config", "x.yaml", "sync", "--dry-run", "a"]) == ["sync", "--config", "x.yaml", "--dry-run", "a"])
        #expect(order.hoist(["--config=x.yaml", "--log-format", "json", "-vv", "--quiet", "run"])
            == ["run", "--config=x.yaml", "--log-format", "json", "-vv", "--quiet"])
        #expect(order.hoist(["-v", "--verbose", "-vq", "validate", "--config", "y"]) == ["validate", "-v", "--verbose", "-vq", "--config", "y"])
    }

    @Test func aValueThatLooksLikeACommandIsAValue() {
        #expect(order.hoist(["--config", "sync", "run"]) == ["run", "--config", "sync"])
        #expect(order.hoist(["--log-format", "--config", "sync"]) == ["sync", "--log-format", "--config"])
    }

    @Test func nestedCommandsGetTheOptionsAfterTheDeepestName() {
        #expect(order.hoist(["--config", "x", "plugin", "check", "--", "prog", "--config", "y"])
            == ["plugin", "check", "--config", "x", "--", "prog", "--config", "y"])
        #expect(order.hoist(["-v", "plugin", "check"]) == ["plugin", "check", "-v"])
    }

    @Test func argumentsInTheUsualOrderAreLeftAlone() {
        for arguments in [
            ["sync", "--config", "x"], ["sync"], [], ["--help"], ["--version"], ["sync", "--", "--config", "x"],
            ["plugin", "check", "--", "prog"],
        ] {
            #expect(order.hoist(arguments) == arguments, "\(arguments)")
        }
    }

    @Test func theScanStopsAtDoubleDashHelpVersionAndUnknownWords() {
        for arguments in [
            ["--config", "x", "--", "sync"], ["--config", "x", "--help"], ["--config", "x", "--version"],
            ["--config", "x", "--dry-run", "sync"], ["--config", "x", "nosuchcommand"], ["--config"], ["--config", "x"],
            ["-x", "sync"], ["--config", "x", "--generate-completion-script", "bash"],
        ] {
            #expect(order.hoist(arguments) == arguments, "\(arguments)")
        }
        // Words after the command are the command's, even when they name another command.
        #expect(order.hoist(["-v", "sync", "run"]) == ["sync", "-v", "run"])
        #expect(order.hoist(["--quiet", "sync", "--config", "x"]) == ["sync", "--quiet", "--config", "x"])
    }
}
