import Foundation
import SyncgateTestSupport
import Testing

/// The test harness's own process launcher (it replaces Foundation's `Process`, whose `run()` crashed the test
/// process now and then by reading past a `/proc/self/fd` entry: see ``ChildProcess``).
@Suite("test harness: child processes")
struct ChildProcessTests {
    static let shell = URL(fileURLWithPath: "/bin/sh")

    @Test("a child inherits none of the parent's descriptors above 2, even with a thousand of them open")
    func descriptorsAboveTwoAreClosed() async throws {
        let dir = try TemporaryDirectory("child-process")
        // Open descriptors, not close-on-exec, as Foundation's FileHandle opens them.
        var open: [Int32] = []
        defer { open.forEach { close($0) } }
        for _ in 0..<1_000 {
            let fd = Glibc.open("/dev/null", O_RDONLY)
            try #require(fd >= 0)
            open.append(fd)
        }
        let process = ChildProcess()
        process.executableURL = Self.shell
        process.arguments = ["-c", "ls /proc/self/fd > \(dir.file("fds").path)"]
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let listed = try String(contentsOf: dir.file("fds"), encoding: .utf8).split(separator: "\n").compactMap { Int($0) }
        // 0, 1, 2 and the one `ls` itself opened to list the folder.
        #expect(listed.filter { $0 > 2 }.count <= 1, "inherited: \(listed)")
    }

    @Test("a pipe sees the child's output and then end of file; the environment and folder are the ones given")
    func pipesEnvironmentAndFolder() async throws {
        let dir = try TemporaryDirectory("child-process")
        let pipe = Pipe()
        let process = ChildProcess()
        process.executableURL = Self.shell
        process.arguments = ["-c", "printf '%s %s' \"$CHILD_TEST\" \"$(pwd)\""]
        process.environment = ["CHILD_TEST": "given", "PATH": "/usr/bin:/bin"]
        process.currentDirectoryURL = dir.url
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(output == "given \(dir.url.resolvingSymlinksInPath().path)")
        #expect(process.terminationReason == .exit)
    }

    @Test("exit codes and signals are told apart; terminate and interrupt reach the child")
    func exitCodesAndSignals() async throws {
        let exits = ChildProcess()
        exits.executableURL = Self.shell
        exits.arguments = ["-c", "exit 7"]
        try exits.run()
        exits.waitUntilExit()
        #expect(exits.terminationStatus == 7)
        #expect(exits.terminationReason == .exit)

        for (stop, signal) in [({ (p: ChildProcess) in p.terminate() }, SIGTERM), ({ p in p.interrupt() }, SIGINT)] {
            let sleeper = ChildProcess()
            sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
            sleeper.arguments = ["600"]
            try sleeper.run()
            #expect(sleeper.isRunning)
            stop(sleeper)
            #expect(await ProcessRunner.waitForExit(sleeper, timeout: 60), "the signal did not end it")
            #expect(sleeper.terminationReason == .uncaughtSignal)
            #expect(sleeper.terminationStatus == signal)
        }
    }

    @Test("a program that does not exist is an error, and nothing runs")
    func missingProgram() throws {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/nonexistent/program")
        #expect(throws: ChildProcessError.self) { try process.run() }
        #expect(!process.isRunning)
    }
}
