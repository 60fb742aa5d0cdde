import Foundation

/// Runs `syncgate-headunit-sim` on a free loopback port for a test, with its own storage folder and control
/// port; ``stop()`` always ends it.
public final class HeadUnitSimulatorProcess: @unchecked Sendable {
    public let port: Int
    public let controlPort: Int
    public let storage: TemporaryDirectory
    public let logFile: URL
    private let process: ChildProcess

    /// Whether the simulator binary was built.
    public static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: TestPaths.executable("syncgate-headunit-sim").path)
    }

    /// Starts the simulator with extra command-line flags (`--no-ack`, `--activate-after 2`, ...).
    /// `prepare` may put files into the storage folder before it starts.
    public init(_ arguments: [String] = [], prepare: (TemporaryDirectory) throws -> Void = { _ in }) async throws {
        await ServerStartGate.shared.enter()
        defer { ServerStartGate.shared.leave() }
        storage = try TemporaryDirectory("headunit-sim")
        try prepare(storage)
        port = Loopback.freePort()
        var control = Loopback.freePort()
        while control == port { control = Loopback.freePort() }
        controlPort = control
        logFile = try TemporaryDirectory("headunit-sim-log").file("simulator.log")
        process = try ProcessRunner.start(
            TestPaths.executable("syncgate-headunit-sim"),
            ["--port", String(port), "--control-port", String(controlPort), "--storage", storage.path] + arguments,
            logFile: logFile)
        let process = self.process
        guard await Loopback.waitForListener(port: port, timeout: 60, while: { process.isRunning }),
            await Loopback.waitForListener(port: controlPort, timeout: 10, while: { process.isRunning })
        else {
            stop()
            throw SimulatorError("the head-unit simulator did not start listening:\n\(log)")
        }
    }

    public struct SimulatorError: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// Everything the simulator logged so far (one line per RPC: `RPC PutFile corr=3 name=... -> SUCCESS`).
    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// The logged RPC lines of one function ("PutFile").
    public func rpcLines(_ function: String) -> [String] {
        log.split(separator: "\n").map(String.init).filter { $0.hasPrefix("RPC \(function) ") }
    }

    /// Sends one control command and returns the answer line.
    @discardableResult
    public func control(_ command: String, timeout: TimeInterval = 5) throws -> String {
        guard let fd = Loopback.connect(port: controlPort, timeout: timeout) else { throw SimulatorError("cannot reach the control port") }
        defer { close(fd) }
        let line = Array((command + "\n").utf8)
        _ = line.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var answer: [UInt8] = []
        var byte: UInt8 = 0
        while recv(fd, &byte, 1, 0) == 1 {
            if byte == 10 { break }
            answer.append(byte)
        }
        return String(decoding: answer, as: UTF8.self)
    }

    public func stop() {
        if process.isRunning {
            process.terminate()
            let deadline = Date().addingTimeInterval(2)
            while process.isRunning && Date() < deadline { usleep(10_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
    }

    /// Stops the simulator and removes its storage and log.
    public func cleanUp() {
        stop()
        storage.remove()
        try? FileManager.default.removeItem(at: logFile.deletingLastPathComponent())
    }

    deinit { stop() }
}
