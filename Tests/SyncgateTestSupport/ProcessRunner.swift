import Foundation

/// Runs a program to completion (or a time limit) and captures what it printed.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// Everything printed, both streams.
    public var output: String { stdout + stderr }
}

public enum ProcessRunner {
    /// Runs `executable` with `arguments`. The environment is the test's own plus `environment`.
    /// The process is killed (SIGKILL) after `timeout` seconds and `status` is then -9.
    public static func run(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:], currentDirectory: URL? = nil,
        timeout: TimeInterval = 120
    ) throws -> ProcessResult {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        let outFile = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("sg-out-\(UUID().uuidString)")
        let errFile = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("sg-err-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: outFile.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errFile.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: outFile)
            try? FileManager.default.removeItem(at: errFile)
        }
        let outHandle = try FileHandle(forWritingTo: outFile)
        let errHandle = try FileHandle(forWritingTo: errFile)
        process.standardOutput = outHandle
        process.standardError = errHandle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        var killed = false
        while process.isRunning {
            if Date() > deadline {
                kill(process.processIdentifier, SIGKILL)
                killed = true
                break
            }
            usleep(10_000)
        }
        process.waitUntilExit()
        try? outHandle.close()
        try? errHandle.close()
        let stdout = (try? String(contentsOf: outFile, encoding: .utf8)) ?? ""
        let stderr = (try? String(contentsOf: errFile, encoding: .utf8)) ?? ""
        return ProcessResult(status: killed ? -9 : process.terminationStatus, stdout: stdout, stderr: stderr)
    }

    /// Starts a long-running program (a server) with its output appended to `logFile`.
    public static func start(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:], logFile: URL? = nil
    ) throws -> Process {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        process.environment = env
        process.standardInput = FileHandle.nullDevice
        if let logFile {
            _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
            let handle = try FileHandle(forWritingTo: logFile)
            process.standardOutput = handle
            process.standardError = handle
        } else {
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
        }
        try process.run()
        return process
    }

    /// Finds a program on PATH.
    public static func which(_ name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(dir)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }
}
