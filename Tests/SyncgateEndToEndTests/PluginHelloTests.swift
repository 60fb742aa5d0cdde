import Foundation
import Logging
import SyncgateCore
@testable import SyncgateExec
import SyncgateTestSupport
import Testing

/// Issue 32: what a plugin is told in its `hello` (its answer timeout and cancel grace, beside the concurrency and
/// attempt timeout), and how it is named when an interpreter runs it.
@Suite("plugin hello and name")
struct PluginHelloTests {
    let dir: TemporaryDirectory

    init() throws {
        dir = try TemporaryDirectory("sg-plugin-hello")
    }

    @Test func helloTellsTheTimeoutsAPluginSizesItsOwnBy() async throws {
        defer { dir.remove() }
        // Keeps its hello line, answers hello and configure, then reads until its stdin closes.
        let script = """
            read -r hello; printf '%s\\n' "$hello" > hello.json
            echo '{"id":1,"ok":{"protocol":1,"capabilities":{}}}'
            read -r configure; echo '{"id":2,"ok":{}}'
            cat >/dev/null
            """
        var spec = PluginSpec(executable: "/bin/sh", arguments: ["-c", script], environment: ["PATH": "/usr/bin:/bin"], directory: dir.url.path,
                              destination: "d", answerTimeout: .seconds(7), cancelGrace: .milliseconds(1500))
        spec.concurrency = 3
        spec.attemptTimeout = .seconds(90)
        let host = PluginHost(spec: spec, logger: Logger(label: "test"))
        _ = try await host.session()
        try await OffThePool.run { host.stop() }
        let hello = String(decoding: try dir.read("hello.json"), as: UTF8.self)
        for field in [#""answer_timeout":7"#, #""cancel_grace":1.5"#, #""concurrency":3"#, #""attempt_timeout":90"#, #""op":"hello""#] {
            #expect(hello.contains(field), "\(field) not in \(hello)")
        }
    }

    @Test func aScriptRunByAnInterpreterGivesThePluginItsName() throws {
        defer { dir.remove() }
        try dir.write("webdav.js", "")
        try dir.write("plugin.py", "")
        try dir.write("config.json", "{}")
        let folder = dir.url.path
        let cases: [(String, [String], String)] = [
            ("/usr/bin/node", ["webdav.js"], "webdav.js"),
            ("/usr/bin/node", ["--no-warnings", "webdav.js", "--verbose"], "webdav.js"),
            ("/usr/bin/python3.12", ["-u", "\(folder)/plugin.py"], "plugin.py"),
            ("/usr/bin/env", ["NODE_ENV=production", "node", "webdav.js"], "webdav.js"),
            ("/usr/bin/python3", ["-u", "-m", "webdav_plugin", "--verbose"], "webdav_plugin"),
            ("/usr/bin/env", ["python3", "-m", "webdav_plugin"], "webdav_plugin"),
            // -m is Python's: another interpreter's is an option like any other.
            ("/usr/bin/ruby", ["-m", "webdav.js"], "webdav.js"),
            // Not a script: the interpreter's own name.
            ("/usr/bin/node", ["-e", "console.log(1)"], "node"),
            ("/usr/bin/node", ["missing.js"], "node"),
            // A program that is not an interpreter keeps its name, whatever files its arguments name.
            ("/opt/bin/syncgate-destination-webdav", ["config.json"], "syncgate-destination-webdav"),
        ]
        for (program, arguments, expected) in cases {
            let spec = PluginSpec(executable: program, arguments: arguments, environment: [:], directory: folder, destination: "d")
            #expect(spec.label == "plugin '\(expected)'", "\(program) \(arguments)")
        }
    }
}
